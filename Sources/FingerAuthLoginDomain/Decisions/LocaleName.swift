/// The caller's language as the texts may use it: a plain locale name (letters, digits,
/// `_ . @ -`, no `/`, not starting with `.`, at most 64 bytes), and not C or POSIX, which
/// mean English. Whatever a caller sets, the worst outcome is another installed language.
package enum LocaleName {
    package static func isPlain(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 64, bytes[0] != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: "@") || b == UInt8(ascii: "-")
        }
    }

    /// A plain name that is not C or POSIX (with or without a codeset).
    package static func isTranslatable(_ name: String) -> Bool {
        isPlain(name) && name != "C" && name != "POSIX" && !name.hasPrefix("C.") && !name.hasPrefix("POSIX.")
    }
}

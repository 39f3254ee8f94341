/// A word of a configuration or a command line that ends up in a claim or a file name — a
/// PAM service (`sudo`, `gdm-password`), an extra claim's name: `[A-Za-z0-9._-]`, not
/// starting with `-`, not `.` or `..`, at most `maxLength` bytes. Not a user name
/// (`UserName` is stricter).
package enum PortableWord {
    package static func isValid(_ word: String, maxLength: Int = 32) -> Bool {
        let bytes = Array(word.utf8)
        guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
        guard bytes[0] != UInt8(ascii: "-"), word != ".", word != ".." else { return false }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
        }
    }
}

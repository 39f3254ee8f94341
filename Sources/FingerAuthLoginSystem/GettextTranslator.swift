import CSystem
import FingerAuthCore
import FingerAuthLoginDomain

/// The texts in the caller's language, through libc's gettext in the module (domain
/// `fingerauth`, catalogs `locale_dir/<lang>/LC_MESSAGES/fingerauth.mo`). The language
/// comes from the caller's `LC_ALL`, `LC_MESSAGES` or `LANG` (the first one set), accepted
/// only as a plain locale name (letters, digits, `_ . @ -`, no `/`, at most 64 bytes); it is
/// used for this thread only (`newlocale`/`uselocale`), never `setlocale` in the host.
/// Whatever the caller sets, the worst outcome is another of the installed languages.
package struct GettextTranslator: Translator {
    static let domain = "fingerauth"
    package let locale: String
    let directory: String

    /// nil when the caller's locale is unset, C/POSIX, or not a plain locale name.
    package init?(directory: String) {
        var chosen: String?
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = getenv(name), value.pointee != 0 {
                chosen = String(cString: value)
                break
            }
        }
        guard let chosen, GettextTranslator.isPlainLocaleName(chosen), chosen != "C", chosen != "POSIX",
            !chosen.hasPrefix("C."), !chosen.hasPrefix("POSIX.")
        else { return nil }
        self.locale = chosen
        self.directory = directory
    }

    package static func isPlainLocaleName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 64, bytes[0] != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: "@") || b == UInt8(ascii: "-")
        }
    }

    package func translate(_ msgid: String) -> String {
        guard let copy = fa_translate(GettextTranslator.domain, directory, locale, msgid) else { return msgid }
        defer { free(copy) }
        let length = fa_strnlen(copy, 1024)
        let text = copy.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        // A catalog text with control characters is not shown (the English text instead).
        return text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7f }) ? text : msgid
    }
}

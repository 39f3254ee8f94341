import CSystem
import FingerAuthCore
import FingerAuthLoginDomain

/// The texts in the caller's language, through libc's gettext (domain `fingerauth`,
/// catalogs `locale_dir/<lang>/LC_MESSAGES/fingerauth.mo`). The language is the one the
/// module found in the caller's `LC_ALL`, `LC_MESSAGES` or `LANG` (`ModuleCall.locale`),
/// accepted only as `LocaleName.isTranslatable`; it is used for this thread only
/// (`newlocale`/`uselocale`), never `setlocale`. Whatever the caller sets, the worst
/// outcome is another of the installed languages.
package struct GettextTranslator: Translator {
    static let domain = "fingerauth"
    package let locale: String
    let directory: String

    /// nil when `locale` is C, POSIX or not a plain locale name.
    package init?(locale: String, directory: String) {
        guard LocaleName.isTranslatable(locale) else { return nil }
        self.locale = locale
        self.directory = directory
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

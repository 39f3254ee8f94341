import FingerAuthCore
import FingerAuthLoginDomain

/// `prompt = parallel` hands a typed password to the next module as `PAM_AUTHTOK`. Debian
/// 12's `pam_unix` takes it with or without `try_first_pass` (it reads it through
/// `pam_get_authtok`, measured end to end); another password module may ask again unless
/// its line says `try_first_pass` or `use_first_pass`. This finds such lines: the auth
/// lines after the module's in the same file, or in a file it includes after that line.
enum PamPasswordHandOn {
    /// Auth modules that ask no password: they do not matter here.
    static let notPasswordModules: Set<String> = [
        "pam_permit", "pam_deny", "pam_env", "pam_faildelay", "pam_nologin", "pam_succeed_if", "pam_group",
        "pam_cap", "pam_securetty", "pam_faillock", "pam_rootok", "pam_wheel", "pam_shells", "pam_listfile",
        "pam_loginuid", "pam_limits", "pam_gnome_keyring", "pam_kwallet5", "pam_systemd", "pam_fingerauth", "pam_unix",
    ]

    /// `service: module` for each password module that would ask again, in services whose
    /// fingerauth line runs with `prompt = parallel` (`configured`: the configuration file
    /// says so; a `prompt=` argument on the line decides for that line).
    static func askingAgain(directory: String, configured: PromptMode) -> [String] {
        let files = PamServices.files(directory)
        var found: [String] = []
        for name in files.names {
            let rows = files.lines[name] ?? []
            guard let at = rows.firstIndex(where: { isAuth($0) && $0.contains { $0.contains(PamServices.module) } })
            else { continue }
            let line = rows[at]
            var mode = configured
            for word in line where word.hasPrefix("prompt=") {
                mode = PromptMode(rawValue: String(word.dropFirst(7))) ?? mode
            }
            guard mode == .parallel else { continue }
            var after = Array(rows[(at + 1)...])
            // One level of includes after our line (`@include common-auth`, `auth include …`).
            after = after.flatMap { words -> [[Substring]] in
                if words.count >= 2, words[0] == "@include" { return files.lines[String(words[1])] ?? [] }
                if words.count >= 3, isAuth(words), words[1] == "include" || words[1] == "substack" {
                    return files.lines[String(words[2])] ?? []
                }
                return [words]
            }
            for words in after where isAuth(words) {
                guard let module = moduleName(words), !notPasswordModules.contains(module) else { continue }
                if !words.contains(where: { $0 == "try_first_pass" || $0 == "use_first_pass" }) {
                    found.append("\(name): \(module)")
                }
            }
        }
        return found
    }

    private static func isAuth(_ words: [Substring]) -> Bool { words.first == "auth" || words.first == "-auth" }

    /// `pam_sss` for `…/pam_sss.so` (the word ending in `.so`).
    private static func moduleName(_ words: [Substring]) -> String? {
        guard let word = words.first(where: { $0.hasSuffix(".so") }) else { return nil }
        let base = word.split(separator: "/").last.map(String.init) ?? String(word)
        return String(base.dropLast(3))
    }
}

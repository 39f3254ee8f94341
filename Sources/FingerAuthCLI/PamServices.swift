import FingerAuthSystem

/// Which PAM services (files in a pam.d directory) use `pam_fingerauth`: directly, or
/// through an `@include` / `include` / `substack` of a file that does.
enum PamServices {
    static let defaultDirectory = "/etc/pam.d"
    static let module = "pam_fingerauth"

    /// The services that use the module, sorted, each with how (`direct` or `via FILE`).
    static func using(directory: String) -> [(service: String, how: String)] {
        let (names, lines) = read(directory)
        let direct = Set(
            lines.compactMap { name, rows in
                rows.contains { $0.contains { $0.contains(module) } } ? name : nil
            })
        return names.compactMap { name in
            if direct.contains(name) { return (name, "direct") }
            if let via = includedFile(lines[name] ?? [], among: direct, type: nil) { return (name, "via \(via)") }
            return nil
        }
    }

    /// The services that start an audit session (`pam_loginuid` in their session stack: sshd,
    /// login, display managers) but do not run the module's `session` line after it, directly
    /// or through an include. In their sessions a `sudo` whose caller unset the SSH variables
    /// and runs on a fresh pty cannot be told remote.
    static func withoutSessionRecord(directory: String) -> [String] {
        let (names, lines) = read(directory)
        func isSession(_ words: [Substring]) -> Bool { words.first == "session" || words.first == "-session" }
        let direct = Set(
            lines.compactMap { name, rows in
                rows.contains { isSession($0) && $0.contains { $0.contains(module) } } ? name : nil
            })
        return names.filter { name in
            let rows = lines[name] ?? []
            guard rows.contains(where: { isSession($0) && $0.contains { $0.contains("pam_loginuid") } }) else {
                return false
            }
            return !direct.contains(name) && includedFile(rows, among: direct, type: "session") == nil
        }
    }

    /// The first file of `files` that `rows` include (`@include`, or `TYPE include|substack`).
    private static func includedFile(_ rows: [[Substring]], among files: Set<String>, type: String?) -> String? {
        for words in rows {
            if words.count >= 2, words[0] == "@include", files.contains(String(words[1])) { return String(words[1]) }
            if words.count >= 3, words[1] == "include" || words[1] == "substack", files.contains(String(words[2])),
                type.map({ words[0] == $0 || words[0] == "-" + $0 }) ?? true
            {
                return String(words[2])
            }
        }
        return nil
    }

    /// The readable files of `directory`, as `read` gives them (for `PamPasswordHandOn`).
    static func files(_ directory: String) -> (names: [String], lines: [String: [[Substring]]]) { read(directory) }

    /// The readable files of `directory` (backups left out), each as its non-comment lines
    /// split into words.
    private static func read(_ directory: String) -> (names: [String], lines: [String: [[Substring]]]) {
        let names = SafeFile.list(directory).filter {
            !$0.hasPrefix(".") && !$0.hasSuffix("~") && !$0.hasSuffix(".dpkg-old")
        }
        var lines: [String: [[Substring]]] = [:]
        for name in names {
            let rule = FileRule(owner: nil, forbiddenBits: 0, maxBytes: 256 * 1024)
            guard let bytes = try? SafeFile.read(directory + "/" + name, rule: rule) else { continue }
            lines[name] = String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard let first = words.first, !first.hasPrefix("#") else { return nil }
                return words
            }
        }
        return (names, lines)
    }
}

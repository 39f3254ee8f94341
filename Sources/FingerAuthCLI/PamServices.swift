import FingerAuthSystem

/// Which PAM services (files in a pam.d directory) use `pam_fingerauth`: directly, or
/// through an `@include` / `include` / `substack` of a file that does.
enum PamServices {
    static let defaultDirectory = "/etc/pam.d"
    static let module = "pam_fingerauth"

    /// The services that use the module, sorted, each with how (`direct` or `via FILE`).
    static func using(directory: String) -> [(service: String, how: String)] {
        let names = SafeFile.list(directory).filter { !$0.hasPrefix(".") && !$0.hasSuffix("~") && !$0.hasSuffix(".dpkg-old") }
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
        let direct = Set(lines.compactMap { name, rows in
            rows.contains { $0.contains { $0.contains(module) } } ? name : nil
        })
        return names.compactMap { name in
            if direct.contains(name) { return (name, "direct") }
            for words in lines[name] ?? [] {
                if words.count >= 2, words[0] == "@include", direct.contains(String(words[1])) {
                    return (name, "via \(words[1])")
                }
                if words.count >= 3, words[1] == "include" || words[1] == "substack", direct.contains(String(words[2])) {
                    return (name, "via \(words[2])")
                }
            }
            return nil
        }
    }
}

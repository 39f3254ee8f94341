/// One `key = value` line of a configuration file, with where it stands.
package struct ConfigLine: Equatable, Sendable {
    package var key: String
    package var value: String
    /// `path:line`, for messages.
    package var source: String

    package init(key: String, value: String, source: String) {
        self.key = key
        self.value = value
        self.source = source
    }
}

/// The format of every FingerAuth configuration file (`/etc/security/fingerauth.conf`,
/// `/etc/fingerauthd.conf`): one `key = value` per line, spaces and tabs around either side
/// ignored, `#` at the start of a line for a comment, blank lines allowed. What the keys
/// mean is the reader's business; reading the file is `ConfigurationFile`'s (FingerAuthSystem).
package enum ConfigLines {
    /// The entries of `text` in order; `name` is the file's path for the messages.
    package static func parse(_ text: String, name: String) throws(ConfigError) -> [ConfigLine] {
        var entries: [ConfigLine] = []
        var lineNumber = 0
        // "\r\n" is one Character in Swift: split on it too, or a file with CRLF line ends
        // would read as one long line.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            let line = trim(rawLine)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let source = "\(name):\(lineNumber)"
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigError(source: source, message: "expected 'key = value'")
            }
            let key = trim(line[..<eq])
            let value = trim(line[line.index(after: eq)...])
            guard !key.isEmpty else { throw ConfigError(source: source, message: "expected 'key = value'") }
            entries.append(ConfigLine(key: String(key), value: String(value), source: source))
        }
        return entries
    }

    private static func trim(_ s: Substring) -> Substring {
        var t = s
        while let f = t.first, f == " " || f == "\t" || f == "\r" { t = t.dropFirst() }
        while let l = t.last, l == " " || l == "\t" || l == "\r" { t = t.dropLast() }
        return t
    }
}

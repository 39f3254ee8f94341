/// A command's arguments: `--name value` options and `--flag` switches, checked against
/// what the command accepts so that a typo is an error, not a silent default.
struct Arguments {
    private(set) var values: [String: String] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positional: [String] = []

    /// Parses `words` given the option names that take a value, the flags, and how many
    /// positional words the command takes.
    init(_ words: [String], options: Set<String>, flags allowedFlags: Set<String>, maxPositional: Int = 0) throws(UsageError) {
        var i = 0
        while i < words.count {
            let word = words[i]
            if word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var inline: String?
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if allowedFlags.contains(name) && inline == nil {
                    flags.insert(name)
                } else if options.contains(name) {
                    if let inline {
                        values[name] = inline
                    } else {
                        guard i + 1 < words.count else { throw UsageError("--\(name) needs a value") }
                        i += 1
                        values[name] = words[i]
                    }
                } else {
                    throw UsageError("unknown option \(word)")
                }
            } else {
                guard positional.count < maxPositional else { throw UsageError("unexpected argument '\(word)'") }
                positional.append(word)
            }
            i += 1
        }
    }

    subscript(_ name: String) -> String? { values[name] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// A mistake in how the command was called: exit status 2 and the usage line.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A failure the user can act on: exit status 1 and a message saying what to do.
struct CommandError: Error {
    let message: String
    let status: Int32
    /// The authenticator could not be reached (connection, TLS, timeout): commands that
    /// can go on without it (`reset`) warn instead of failing.
    let unreachable: Bool
    init(_ message: String, status: Int32 = 1, unreachable: Bool = false) {
        self.message = message
        self.status = status
        self.unreachable = unreachable
    }
}

/// A command-line mistake: the message says what to do; the exit status is 2.
struct UsageError: Error {
    let message: String
}

/// `--name value` / `--name=value` options and `--flag` switches after a subcommand.
/// Unknown, repeated or valueless options are usage errors.
struct Options {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments` allowing `valued` options (names without dashes) and `switches`.
    init(_ arguments: ArraySlice<String>, valued: Set<String>, switches: Set<String> = [],
         command: String) throws(UsageError) {
        var rest = arguments[...]
        while let arg = rest.popFirst() {
            guard arg.hasPrefix("--"), arg.count > 2 else {
                throw UsageError(message: "\(command): unexpected argument '\(arg)'; see 'fingerauthd --help'")
            }
            var name = String(arg.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if switches.contains(name), inline == nil {
                flags.insert(name)
                continue
            }
            guard valued.contains(name) else {
                throw UsageError(message: "\(command): unknown option --\(name); see 'fingerauthd --help'")
            }
            guard values[name] == nil else {
                throw UsageError(message: "\(command): --\(name) given twice; give it once")
            }
            guard let value = inline ?? rest.popFirst(), !value.isEmpty else {
                throw UsageError(message: "\(command): --\(name) needs a value")
            }
            values[name] = value
        }
    }

    /// The value of an option that must be present.
    func required(_ name: String, command: String) throws(UsageError) -> String {
        guard let value = values[name] else {
            throw UsageError(message: "\(command): --\(name) is required; see 'fingerauthd --help'")
        }
        return value
    }

    func optional(_ name: String) -> String? { values[name] }

    /// Every valued option given, by name.
    var all: [String: String] { values }

    /// These options with `defaults` (from the configuration file) under them: a flag wins.
    func over(_ defaults: [String: String]) -> Options {
        var merged = self
        for (name, value) in defaults where merged.values[name] == nil { merged.values[name] = value }
        return merged
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// A whole number (seconds, counts) in `range`, or `fallback` when absent.
    func seconds(_ name: String, default fallback: Int64, range: ClosedRange<Int64>,
                 command: String) throws(UsageError) -> Int64 {
        guard let text = values[name] else { return fallback }
        guard let value = Int64(text), range.contains(value) else {
            throw UsageError(message: "\(command): --\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

import FingerAuthCore

/// A subcommand's `--name value` / `--name=value` options and `--flag` switches, parsed by
/// `CommandArguments` (the parser every FingerAuth program shares: unknown, repeated or
/// valueless options are usage errors), with the subcommand's name in every message.
struct Options {
    private var arguments: CommandArguments

    /// Parses `arguments` allowing `valued` options (names without dashes) and `switches`.
    init(
        _ arguments: ArraySlice<String>, valued: Set<String>, switches: Set<String> = [],
        command: String
    ) throws(UsageError) {
        do {
            self.arguments = try CommandArguments(arguments, valued: valued, switches: switches)
        } catch {
            let mistake = error.within(command)
            switch error.cause {
            case .unknownOption, .unexpectedArgument: throw mistake.adding("see 'fingerauthd \(command) --help'")
            default: throw mistake
            }
        }
    }

    /// The value of an option that must be present.
    func required(_ name: String, command: String) throws(UsageError) -> String {
        guard let value = arguments[name] else {
            throw UsageError(message: "\(command): --\(name) is required; see 'fingerauthd \(command) --help'")
        }
        return value
    }

    func optional(_ name: String) -> String? { arguments[name] }

    /// Every valued option given, by name.
    var all: [String: String] { arguments.values }

    /// These options with `defaults` (from the configuration file) under them: a flag wins.
    func over(_ defaults: [String: String]) -> Options {
        var merged = self
        merged.arguments = arguments.over(defaults)
        return merged
    }

    func flag(_ name: String) -> Bool { arguments.has(name) }

    /// A whole number (seconds, counts) in `range`, or `fallback` when absent.
    func seconds(
        _ name: String, default fallback: Int64, range: ClosedRange<Int64>,
        command: String
    ) throws(UsageError) -> Int64 {
        guard let text = arguments[name] else { return fallback }
        guard let value = Int64(text), range.contains(value) else {
            throw UsageError(
                message: "\(command): --\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

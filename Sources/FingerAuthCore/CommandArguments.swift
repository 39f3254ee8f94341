/// The words of one command line after its command: `--name value` and `--name=value`
/// options, `--flag` switches and positional words, checked against what the command takes.
/// One parser with one behaviour for every program (`fingerauth`, `fingerauthd`,
/// `fingerauth-agent`, the login helper's own arguments):
///
/// - an option the command does not take is refused (`unknown option --colour`), so that a
///   typo is an error, never a silent default;
/// - an option or switch given twice is refused (`--user given twice; give it once`): which
///   one was meant cannot be told, and a script that appends an option must not silently
///   change what an earlier one said;
/// - an option without a value, or with an empty one, is refused (`--user needs a value`);
///   the next word is its value whatever it looks like;
/// - a switch takes no value (`--json=yes` is refused);
/// - positional words beyond what the command takes are refused.
///
/// `--help` and `-h` are not options: `asksForHelp` finds them before a command parses its
/// words, and the program prints that command's usage.
package struct CommandArguments: Equatable, Sendable {
    /// Every valued option given, by name (without its dashes).
    package private(set) var values: [String: String] = [:]
    /// Every switch given, by name.
    package private(set) var switches: Set<String> = []
    /// The words that are not options, in order.
    package private(set) var positional: [String] = []

    /// Parses `words` given the names (without dashes) of the options that take a value,
    /// the switches, and how many positional words the command takes.
    package init<Words: Sequence>(
        _ words: Words, valued: Set<String>, switches allowedSwitches: Set<String> = [],
        maxPositional: Int = 0
    ) throws(UsageError) where Words.Element == String {
        var iterator = words.makeIterator()
        while let word = iterator.next() {
            guard word.utf8.count > 1, word.utf8.first == UInt8(ascii: "-") else {
                guard positional.count < maxPositional else { throw UsageError(.unexpectedArgument, word: word) }
                positional.append(word)
                continue
            }
            // Options are long ones only: `-x` is no spelling of anything.
            guard word.utf8.count > 2, word.utf8.starts(with: "--".utf8) else {
                throw UsageError(.unknownOption, word: word)
            }
            // By scalars, not Characters: a combining mark after `--` must not vanish into
            // a dash and leave a known name behind.
            var name = String(word.unicodeScalars.dropFirst(2))
            var inline: String?
            if let equals = name.unicodeScalars.firstIndex(of: "=") {
                inline = String(name.unicodeScalars[name.unicodeScalars.index(after: equals)...])
                name = String(name.unicodeScalars[..<equals])
            }
            if allowedSwitches.contains(name) {
                guard inline == nil else { throw UsageError(.switchWithValue, word: "--" + name) }
                guard switches.insert(name).inserted else { throw UsageError(.repeatedOption, word: "--" + name) }
            } else if valued.contains(name) {
                guard values[name] == nil else { throw UsageError(.repeatedOption, word: "--" + name) }
                guard let value = inline ?? iterator.next(), !value.isEmpty else {
                    throw UsageError(.missingValue, word: "--" + name)
                }
                values[name] = value
            } else {
                throw UsageError(.unknownOption, word: "--" + name)
            }
        }
    }

    /// The value of option `name`, nil when it was not given.
    package subscript(_ name: String) -> String? { values[name] }

    /// Whether switch `name` was given.
    package func has(_ name: String) -> Bool { switches.contains(name) }

    /// Whether `words` ask for the command's usage: `--help` or `-h` among them, wherever
    /// they stand (`fingerauth enroll --help`, `fingerauthd keys revoke --kid K --help`).
    package static func asksForHelp<Words: Sequence>(_ words: Words) -> Bool where Words.Element == String {
        words.contains { $0 == "--help" || $0 == "-h" }
    }

    /// The same options with `defaults` (a configuration file's) under them: a given option wins.
    package func over(_ defaults: [String: String]) -> CommandArguments {
        var merged = self
        for (name, value) in defaults where merged.values[name] == nil { merged.values[name] = value }
        return merged
    }
}

/// A mistake in how a program was called: the message says what to do; programs exit with
/// status 2 (the login helper answers `FAIL usage <message>`). `cause` tells the parser's
/// own refusals apart, so that every program words them alike.
package struct UsageError: Error, Equatable, Sendable, CustomStringConvertible {
    package enum Cause: Equatable, Sendable {
        case unknownCommand
        case unknownOption
        case repeatedOption
        case missingValue
        case switchWithValue
        case unexpectedArgument
        /// A value or a combination the command refuses.
        case invalid
    }

    package let cause: Cause
    package let message: String

    /// A command's own refusal of what it was given.
    package init(message: String) {
        self.init(.invalid, message)
    }

    private init(_ cause: Cause, _ message: String) {
        self.cause = cause
        self.message = message
    }

    package var description: String { message }

    /// The same mistake with `context` before the message (`keys list: --user given twice…`).
    package func within(_ context: String) -> UsageError {
        UsageError(cause, context + ": " + message)
    }

    /// The same mistake with `hint` after the message (`…; see 'fingerauthd keys list --help'`).
    package func adding(_ hint: String) -> UsageError {
        UsageError(cause, message + "; " + hint)
    }

    /// A command the program does not have; `words` as they were typed (`keys frob`).
    package static func unknownCommand(_ words: String) -> UsageError {
        UsageError(.unknownCommand, word: words)
    }

    /// The parser's refusal of `word` (an option with its dashes, or a stray word), in the
    /// words every program uses.
    init(_ cause: Cause, word: String) {
        let word = UsageError.shown(word)
        switch cause {
        case .unknownCommand: self.init(cause, "unknown command '\(word)'")
        case .unknownOption: self.init(cause, "unknown option \(word)")
        case .repeatedOption: self.init(cause, "\(word) given twice; give it once")
        case .missingValue: self.init(cause, "\(word) needs a value")
        case .switchWithValue: self.init(cause, "\(word) takes no value")
        case .unexpectedArgument: self.init(cause, "unexpected argument '\(word)'")
        case .invalid: self.init(cause, word)
        }
    }

    /// A word as a message may repeat it: printable ASCII (a space stays, anything else
    /// becomes `?`), at most 64 characters. The helper's usage line goes to the module, and
    /// a terminal should not interpret what someone typed.
    static func shown(_ word: String) -> String {
        String(String(word.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(64))
    }
}

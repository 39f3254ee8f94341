/// What `fingerauth-scan` tells the module, one ASCII line each on its standard output.
///
///     READY <reader name>        the reader is open and waiting for a finger
///     RETRY <hint>               the reader asks for another try (too short, centre finger…)
///     NOMATCH <tries left>       a finger that did not match; 0 left ends the scan
///     MATCH <finger>             an enrolled finger matched
///     FAIL <reason> <text>       the scan could not be done (reasons: `ScanFailure`)
public enum ScanMessage: Equatable, Sendable {
    case ready(reader: String)
    case retry(hint: String)
    case noMatch(triesLeft: Int)
    case match(finger: String)
    case fail(ScanFailure, detail: String)

    /// Longest line the module reads from the helper.
    public static let maxLineBytes = 256

    /// The line for this message, without the newline: printable ASCII only, cut to
    /// `maxLineBytes`, so that every line reads back (a parsed line renders as itself).
    public var line: String {
        let text: String
        switch self {
        case let .ready(reader): text = "READY " + ScanMessage.clean(reader)
        case let .retry(hint): text = "RETRY " + ScanMessage.clean(hint)
        case let .noMatch(left): text = "NOMATCH \(left)"
        case let .match(finger): text = "MATCH " + ScanMessage.clean(finger)
        case let .fail(reason, detail): text = "FAIL \(reason.rawValue) " + ScanMessage.clean(detail)
        }
        return String(text.prefix(ScanMessage.maxLineBytes))
    }

    /// Parses one line (without its newline); nil for anything that is not exactly a message.
    public init?(line: String) {
        let bytes = Array(line.utf8)
        guard !bytes.isEmpty, bytes.count <= ScanMessage.maxLineBytes,
              bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        let word: Substring
        let rest: String
        if let space = line.firstIndex(of: " ") {
            word = line[..<space]
            rest = String(line[line.index(after: space)...])
        } else {
            word = Substring(line)
            rest = ""
        }
        switch word {
        case "READY": self = .ready(reader: rest)
        case "RETRY": self = .retry(hint: rest)
        case "NOMATCH":
            guard let left = Int(rest), left >= 0, left < 100 else { return nil }
            self = .noMatch(triesLeft: left)
        case "MATCH":
            guard !rest.isEmpty else { return nil }
            self = .match(finger: rest)
        case "FAIL":
            let reasonText = rest.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = reasonText.first, let reason = ScanFailure(rawValue: String(first)) else { return nil }
            self = .fail(reason, detail: reasonText.count > 1 ? String(reasonText[1]) : "")
        default: return nil
        }
    }

    private static func clean(_ text: String) -> String {
        let printable = text.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }
        return String(printable)
    }
}

/// Why a scan could not be done. Every one of them falls over to the password.
public enum ScanFailure: String, Sendable, CaseIterable {
    /// No fingerprint reader was found.
    case noReader = "no-reader"
    /// The reader is in use by another program (fprintd, another login).
    case busy
    /// The user has no readable enrolled print.
    case noPrints = "no-prints"
    /// A print file is corrupt or from another reader.
    case badPrint = "bad-print"
    /// The reader disappeared during the scan.
    case removed
    /// The helper's own deadline passed before a finger was read.
    case timeout
    /// Any other reader or library error.
    case deviceError = "device-error"
    /// The helper was called wrongly.
    case usage
}

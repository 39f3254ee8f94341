import FingerAuthCore

/// What the login helper (`fingerauth-login`) tells the module, one ASCII line each on its
/// standard output, in this order:
///
///     READY <reader name>              reader open, device key loaded, authenticator reached
///     RETRY <hint>                     the reader asks for another try (too short, centre finger…)
///     NOMATCH <tries left>             a finger that did not match; 0 left ends the login
///     MATCH <finger>                   an enrolled finger matched; the reader is closed
///     ACCEPTED <jti> <kid>             the authenticator accepted this token for this user
///     OFFLINE <jti> <kid> <gid> <exp> <cause>
///                                      the authenticator could not be reached (<cause>: the
///                                      network's word, e.g. refused, no-route, no-such-name,
///                                      timeout, http-503); the finger and a fresh signature of
///                                      the device key logged in within the offline grant <gid>,
///                                      which ends at <exp> (epoch seconds)
///     REFUSED <jti> <kid> <code> <why> the authenticator said no (401/403, another user…);
///                                      <code> a `RefusalCode`, which alone chooses the person's text
///     UNAVAILABLE <jti> <kid> <why>    the authenticator could not answer properly (5xx, timeout…)
///     FAIL <reason> <text>             the login step could not be done (reasons: `HelperFailure`)
///
/// A remote approval (`remote = approve`) has no reader here: its helper says, instead of
/// `READY`, where the person is to touch and what code they will see, then `MATCH` (the
/// workstation that approved) and `ACCEPTED`, or `REFUSED`/`UNAVAILABLE`:
///
///     APPROVAL <code> <workstations>   the authenticator holds the request; <code> two
///                                      digits, <workstations> the user's, comma-separated
///                                      (`-`: none known)
///
/// The module believes a verdict only when it names the `jti` the module itself chose.
package enum HelperMessage: Equatable, Sendable {
    case ready(reader: String)
    case retry(hint: String)
    case noMatch(triesLeft: Int)
    case match(finger: String)
    case accepted(jti: String, kid: String)
    case offline(jti: String, kid: String, grant: String, expires: Int64, cause: String)
    case refused(jti: String, kid: String, code: RefusalCode, detail: String)
    case unavailable(jti: String, kid: String, detail: String)
    case fail(HelperFailure, detail: String)
    case approval(code: String, workstations: String)

    /// Longest line the module reads from the helper.
    package static let maxLineBytes = 256

    /// The line for this message, without the newline: printable ASCII only, cut to
    /// `maxLineBytes`, so that every line reads back (a parsed line renders as itself).
    package var line: String {
        let text: String
        switch self {
        case let .ready(reader): text = "READY " + HelperMessage.clean(reader)
        case let .retry(hint): text = "RETRY " + HelperMessage.clean(hint)
        case let .noMatch(left): text = "NOMATCH \(left)"
        case let .match(finger): text = "MATCH " + HelperMessage.clean(finger)
        case let .accepted(jti, kid): text = "ACCEPTED " + HelperMessage.word(jti) + " " + HelperMessage.word(kid)
        case let .offline(jti, kid, grant, expires, cause):
            text =
                "OFFLINE " + HelperMessage.word(jti) + " " + HelperMessage.word(kid) + " " + HelperMessage.word(grant)
                + " \(expires) " + HelperMessage.word(cause)
        case let .refused(jti, kid, code, detail):
            text =
                "REFUSED " + HelperMessage.word(jti) + " " + HelperMessage.word(kid) + " " + code.rawValue + " "
                + HelperMessage.clean(detail)
        case let .unavailable(jti, kid, detail):
            text =
                "UNAVAILABLE " + HelperMessage.word(jti) + " " + HelperMessage.word(kid) + " "
                + HelperMessage.clean(detail)
        case let .fail(reason, detail): text = "FAIL \(reason.rawValue) " + HelperMessage.clean(detail)
        case let .approval(code, workstations):
            text = "APPROVAL " + HelperMessage.word(code) + " " + HelperMessage.word(workstations)
        }
        return String(text.prefix(HelperMessage.maxLineBytes))
    }

    /// Parses one line (without its newline); nil for anything that is not exactly a message.
    package init?(line: String) {
        let bytes = Array(line.utf8)
        guard !bytes.isEmpty, bytes.count <= HelperMessage.maxLineBytes,
            bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f })
        else { return nil }
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
        case "ACCEPTED":
            let fields = rest.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2, !fields[0].isEmpty, !fields[1].isEmpty else { return nil }
            self = .accepted(jti: String(fields[0]), kid: String(fields[1]))
        case "OFFLINE":
            let fields = rest.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 5, !fields[0].isEmpty, !fields[1].isEmpty, !fields[2].isEmpty, !fields[4].isEmpty,
                let expires = Int64(fields[3]), expires > 0
            else { return nil }
            self = .offline(
                jti: String(fields[0]), kid: String(fields[1]), grant: String(fields[2]), expires: expires,
                cause: String(fields[4]))
        case "REFUSED":
            // The code is one of `RefusalCode`, exactly: a line without one is no verdict.
            let fields = rest.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, !fields[0].isEmpty, !fields[1].isEmpty,
                let code = RefusalCode(rawValue: String(fields[2]))
            else { return nil }
            self = .refused(
                jti: String(fields[0]), kid: String(fields[1]), code: code,
                detail: fields.count > 3 ? String(fields[3]) : "")
        case "UNAVAILABLE":
            let fields = rest.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count >= 2, !fields[0].isEmpty, !fields[1].isEmpty else { return nil }
            self = .unavailable(
                jti: String(fields[0]), kid: String(fields[1]), detail: fields.count > 2 ? String(fields[2]) : "")
        case "APPROVAL":
            let fields = rest.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2, fields[0].utf8.count == 2, fields[0].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                !fields[1].isEmpty
            else { return nil }
            self = .approval(code: String(fields[0]), workstations: String(fields[1]))
        case "FAIL":
            let reasonText = rest.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = reasonText.first, let reason = HelperFailure(rawValue: String(first)) else { return nil }
            self = .fail(reason, detail: reasonText.count > 1 ? String(reasonText[1]) : "")
        default: return nil
        }
    }

    private static func clean(_ text: String) -> String {
        let printable = text.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }
        return String(printable)
    }

    /// A field that must stay one word: printable, no space, never empty.
    private static func word(_ text: String) -> String {
        let cleaned = String(text.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7f ? Character($0) : "?" })
        return cleaned.isEmpty ? "-" : cleaned
    }
}

/// Why the login step could not be done. Every one of them falls over to the password.
package enum HelperFailure: String, Sendable, CaseIterable {
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
    /// The device key is missing, unsafe, encrypted or not an RSA key.
    case key
    /// The authenticator could not be reached (DNS, TCP, TLS) before the scan began.
    case unreachable
    /// The helper was called wrongly.
    case usage
    /// The laptop's lid is closed and the only reader is built in (`lid = skip`): skipped at
    /// once, before anyone is asked for a finger.
    case lidClosed = "lid-closed"
}

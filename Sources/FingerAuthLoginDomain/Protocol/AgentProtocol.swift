import FingerAuthCore

/// The line protocol between a PAM module running as a user (a screen locker) and
/// `fingerauth-agent`, the root service on a Unix stream socket. Version 1, ASCII lines
/// ending in `\n`, each parsed strictly: anything that is not exactly one of the lines
/// below is an error, and the side that reads it closes the connection.
///
/// Client to agent, one line within `AgentProtocol.requestMilliseconds` of the connect:
///
///     FINGERAUTH-AGENT 1 LOGIN <user> <service> <silent|verbose>
///     FINGERAUTH-AGENT 1 STATUS
///
/// Agent to client:
///
///     AGENT 1 <milliseconds>        first line of a login: the request ends within that time
///     INFO <text>                   a PAM_TEXT_INFO for the user ("Place your finger…")
///     ERROR <text>                  a PAM_ERROR_MSG for the user
///     RESULT <code> <finger> <kid> <jti> <reason>   last line; `-` for an absent field;
///                                   <reason> one `OutcomeCategory` word, never the details
///     STATUS 1 <software version>   the answer to STATUS
///
/// The agent sends a verdict, never a token, a key or a print: `kid` is the public key's
/// thumbprint and `jti` the id of a token already used.
package enum AgentProtocol {
    /// The protocol's version, the `1` of every request and of `AGENT 1`, `STATUS 1`.
    package static let version = 1
    /// Where the socket unit listens and the module asks (`agent_socket`).
    package static let defaultSocket = "/run/fingerauth/agent.sock"
    /// Longest request line, newline included.
    package static let maxRequestBytes = 256
    /// Longest line from the agent, and all of them together.
    package static let maxLineBytes = 512
    package static let maxTotalBytes = 16 * 1024
    /// How long the agent waits for the request after the connect.
    package static let requestMilliseconds: Int64 = 2000
    /// How long the client waits for the first line after sending its request.
    package static let firstLineMilliseconds: Int64 = 3000
    /// The token's `service` claim for every login the agent makes: the client names a
    /// service too, but nobody vouches for it, so it goes into `client_service` instead.
    package static let serviceClaim = "fingerauth-agent"
    /// The most a client believes of `AGENT 1 <milliseconds>`.
    package static let maxLoginMilliseconds = 180_000
    static let requestPrefix = "FINGERAUTH-AGENT 1 "
}

/// What a client asks the agent.
package enum AgentRequest: Equatable, Sendable {
    /// A fingerprint login for `user` (which must be the caller's own) at PAM `service`.
    case login(user: String, service: String, silent: Bool)
    /// Is the agent there, and which version.
    case status

    /// The line, without its newline.
    package var line: String {
        switch self {
        case let .login(user, service, silent):
            return AgentProtocol.requestPrefix + "LOGIN \(user) \(service) " + (silent ? "silent" : "verbose")
        case .status:
            return AgentProtocol.requestPrefix + "STATUS"
        }
    }

    /// Parses one request line (without its newline); nil for anything else. The user must
    /// follow `UserName`'s rule, the service `ServiceName`'s.
    package init?(line: String) {
        let bytes = Array(line.utf8)
        guard bytes.count < AgentProtocol.maxRequestBytes, AgentWire.isPrintable(bytes),
            line.hasPrefix(AgentProtocol.requestPrefix)
        else { return nil }
        let fields = line.dropFirst(AgentProtocol.requestPrefix.utf8.count)
            .split(separator: " ", omittingEmptySubsequences: false)
        switch fields.first {
        case "STATUS":
            guard fields.count == 1 else { return nil }
            self = .status
        case "LOGIN":
            guard fields.count == 4, UserName.isValid(String(fields[1])), ServiceName.isValid(fields[2]) else {
                return nil
            }
            switch fields[3] {
            case "silent": self = .login(user: String(fields[1]), service: String(fields[2]), silent: true)
            case "verbose": self = .login(user: String(fields[1]), service: String(fields[2]), silent: false)
            default: return nil
            }
        default:
            return nil
        }
    }
}

/// One line from the agent.
package enum AgentReply: Equatable, Sendable {
    case hello(milliseconds: Int)
    case info(String)
    case error(String)
    case result(AgentResult)
    case status(software: String)

    /// The line, without its newline: printable ASCII, within `AgentProtocol.maxLineBytes`.
    package var line: String {
        let text: String
        switch self {
        case let .hello(ms):
            text = "AGENT \(AgentProtocol.version) \(max(0, min(ms, AgentProtocol.maxLoginMilliseconds)))"
        case let .info(t): text = "INFO " + AgentWire.text(t, max: 256)
        case let .error(t): text = "ERROR " + AgentWire.text(t, max: 256)
        case let .result(r):
            text =
                "RESULT \(r.code.rawValue) "
                + [r.finger, r.kid, r.jti].map { AgentWire.word($0) }.joined(separator: " ")
                + " " + AgentWire.text(r.reason, max: 200)
        case let .status(software): text = "STATUS \(AgentProtocol.version) " + AgentWire.word(software)
        }
        return String(text.prefix(AgentProtocol.maxLineBytes))
    }

    /// Parses one line (without its newline); nil for anything that is not exactly a reply.
    package init?(line: String) {
        let bytes = Array(line.utf8)
        guard !bytes.isEmpty, bytes.count <= AgentProtocol.maxLineBytes, AgentWire.isPrintable(bytes) else {
            return nil
        }
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let rest = parts.count > 1 ? parts[1] : ""
        switch parts[0] {
        case "AGENT":
            let f = rest.split(separator: " ", omittingEmptySubsequences: false)
            guard f.count == 2, f[0] == "\(AgentProtocol.version)", let ms = AgentWire.number(f[1]),
                ms <= AgentProtocol.maxLoginMilliseconds
            else { return nil }
            self = .hello(milliseconds: ms)
        case "INFO":
            guard !rest.isEmpty, rest.utf8.count <= 256 else { return nil }
            self = .info(String(rest))
        case "ERROR":
            guard !rest.isEmpty, rest.utf8.count <= 256 else { return nil }
            self = .error(String(rest))
        case "STATUS":
            let f = rest.split(separator: " ", omittingEmptySubsequences: false)
            guard f.count == 2, f[0] == "\(AgentProtocol.version)", AgentWire.isWord(f[1], max: 64) else { return nil }
            self = .status(software: String(f[1]))
        case "RESULT":
            let f = rest.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
            guard f.count == 5, let raw = AgentWire.number(f[0]), let code = AgentResult.code(Int32(clamping: raw)),
                f[1...3].allSatisfy({ AgentWire.isWord($0, max: 64) }), !f[4].isEmpty, f[4].utf8.count <= 200
            else { return nil }
            func field(_ s: Substring) -> String? { s == "-" ? nil : String(s) }
            self = .result(
                AgentResult(code: code, reason: String(f[4]), finger: field(f[1]), kid: field(f[2]), jti: field(f[3])))
        default:
            return nil
        }
    }
}

/// The agent's verdict: a PAM code with the reason (an `OutcomeCategory` word from the
/// agent), finger, kid and jti for the log line.
package struct AgentResult: Equatable, Sendable {
    package var code: PAMCode
    package var reason: String
    package var finger: String?
    package var kid: String?
    package var jti: String?

    /// A verdict; `reason` is for the log line (secret-free), the rest may be absent.
    package init(code: PAMCode, reason: String, finger: String? = nil, kid: String? = nil, jti: String? = nil) {
        self.code = code
        self.reason = reason
        self.finger = finger
        self.kid = kid
        self.jti = jti
    }

    /// The codes an agent may answer with; any other number is a protocol error.
    static func code(_ raw: Int32) -> PAMCode? {
        let allowed: [PAMCode] = [
            .success, .serviceError, .systemError, .authError, .authInfoUnavailable,
            .userUnknown, .maxTries, .conversationError, .ignore,
        ]
        return allowed.first { $0.rawValue == raw }
    }
}

/// Character rules shared by both directions.
enum AgentWire {
    static func isPrintable(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f } }

    /// One word: 1…max printable bytes, no space.
    static func isWord(_ s: Substring, max: Int) -> Bool {
        let b = Array(s.utf8)
        return !b.isEmpty && b.count <= max && b.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    /// A decimal number of at most 9 digits, no sign, no leading zeros but "0".
    static func number(_ s: Substring) -> Int? {
        let b = Array(s.utf8)
        guard !b.isEmpty, b.count <= 9, b.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), b.count == 1 || b[0] != 0x30 else {
            return nil
        }
        return Int(String(s))
    }

    static func text(_ t: String, max: Int) -> String {
        let cleaned = String(
            String(t.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(max))
        return cleaned.isEmpty ? "-" : cleaned
    }

    static func word(_ t: String?) -> String {
        guard let t else { return "-" }
        let cleaned = String(
            String(t.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(64))
        return cleaned.isEmpty ? "-" : cleaned
    }
}

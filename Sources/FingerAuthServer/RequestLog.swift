#if canImport(Glibc)
import Glibc
#endif

/// What one request did, for its log line.
public struct RequestSummary: Sendable {
    public var method: String
    public var path: String
    public var status: Int
    /// `accept`, `deny`, `error` or `-`.
    public var outcome: String
    public var reason: String?
    /// The verified user.
    public var sub: String?
    /// The user an unverified token only named.
    public var claimed: String?
    public var kid: String?
    public var jti: String?
    public var peer: String?
    /// Handling time in milliseconds, once known.
    public var milliseconds: Int?
    /// No line of its own: a refusal counted together with others (one line per address
    /// and window says so instead).
    public var quiet = false

    public init(method: String, path: String, status: Int, outcome: String = "-", reason: String? = nil,
                sub: String? = nil, kid: String? = nil, jti: String? = nil, peer: String? = nil) {
        self.method = method
        self.path = path
        self.status = status
        self.outcome = outcome
        self.reason = reason
        self.sub = sub
        self.kid = kid
        self.jti = jti
        self.peer = peer
    }
}

/// One line per request on standard error, written with a single write(2) so that lines
/// from worker threads never interleave. Fields are cleaned and capped: the path to 40
/// characters and every other value to 64, so a JWT, token or key never fits in a line.
public final class RequestLog: Sendable {
    private let fd: Int32

    /// A log on file descriptor `fd` (standard error by default); the fd is not owned.
    public init(fd: Int32 = 2) { self.fd = fd }

    /// `method=… path=… status=… outcome=… reason=… sub=… [claimed=…] kid=… jti=… peer=… ms=…`
    public static func line(_ s: RequestSummary) -> String {
        func field(_ value: String?, _ limit: Int = 64) -> String {
            guard let value, !value.isEmpty else { return "-" }
            return LogText.clean(value, limit: limit)
        }
        return "fingerauthd: method=\(field(s.method, 10)) path=\(field(s.path, 40)) status=\(s.status) " +
            "outcome=\(field(s.outcome)) reason=\(field(s.reason)) sub=\(field(s.sub))" +
            (s.claimed.map { " claimed=" + field($0) } ?? "") + " kid=\(field(s.kid)) " +
            "jti=\(field(s.jti)) peer=\(field(s.peer)) ms=\(s.milliseconds.map(String.init) ?? "-")\n"
    }

    /// Writes the line for `summary`.
    public func record(_ summary: RequestSummary) {
        write(Self.line(summary))
    }

    /// Writes a free-form line (start, stop, errors). Callers never pass secrets.
    public func message(_ text: String) {
        write("fingerauthd: " + LogText.printable(text) + "\n")
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw in
                Glibc.write(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
        bytes.removeAll()
    }
}

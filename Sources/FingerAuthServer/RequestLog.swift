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
        String(decoding: bytes(s), as: UTF8.self)
    }

    /// The line for `s` as bytes, built in one buffer.
    static func bytes(_ s: RequestSummary) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(320)
        func field(_ name: String, _ value: String?, _ limit: Int = 64) {
            out.append(contentsOf: name.utf8)
            out.append(UInt8(ascii: "="))
            if let value, !value.isEmpty {
                LogText.append(value, limit: limit, to: &out)
            } else {
                out.append(UInt8(ascii: "-"))
            }
        }
        out.append(contentsOf: "fingerauthd: ".utf8)
        field("method", s.method, 10)
        field(" path", s.path, 40)
        out.append(contentsOf: " status=\(s.status)".utf8)
        field(" outcome", s.outcome)
        field(" reason", s.reason)
        field(" sub", s.sub)
        if let claimed = s.claimed { field(" claimed", claimed) }
        field(" kid", s.kid)
        field(" jti", s.jti)
        field(" peer", s.peer)
        out.append(contentsOf: " ms=\(s.milliseconds.map(String.init) ?? "-")\n".utf8)
        return out
    }

    /// Writes the line for `summary`.
    public func record(_ summary: RequestSummary) {
        write(Self.bytes(summary))
    }

    /// Writes a free-form line (start, stop, errors). Callers never pass secrets.
    public func message(_ text: String) {
        write(Array(("fingerauthd: " + LogText.printable(text) + "\n").utf8))
    }

    private func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.write(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}

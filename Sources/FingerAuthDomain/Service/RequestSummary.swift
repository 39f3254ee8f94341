/// What one request did, for its log line: `fingerauthd: method=… path=… status=…`. Fields
/// are cleaned and capped (`LogText`): the path to 40 characters and every other value to
/// 64, so a JWT, token or key never fits in a line.
public struct RequestSummary: Sendable {
    public var method: String
    public var path: String
    public var status: Int
    /// How it ended; nil (`-`) for a request that writes no audit row.
    public var outcome: AuditOutcome?
    public var reason: AuditReason?
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

    public init(
        method: String, path: String, status: Int, outcome: AuditOutcome? = nil, reason: AuditReason? = nil,
        sub: String? = nil, kid: String? = nil, jti: String? = nil, peer: String? = nil
    ) {
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

    /// `method=… path=… status=… outcome=… reason=… sub=… [claimed=…] kid=… jti=… peer=… ms=…`
    public var line: String {
        String(decoding: lineBytes, as: UTF8.self)
    }

    /// The line as bytes, built in one buffer.
    public var lineBytes: [UInt8] {
        let s = self
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
        field(" outcome", s.outcome?.name)
        field(" reason", s.reason?.text)
        field(" sub", s.sub)
        if let claimed = s.claimed { field(" claimed", claimed) }
        field(" kid", s.kid)
        field(" jti", s.jti)
        field(" peer", s.peer)
        out.append(contentsOf: " ms=\(s.milliseconds.map(String.init) ?? "-")\n".utf8)
        return out
    }
}

/// One row of the audit table: who tried what, from where, and what the answer was.
/// Values from requests are cleaned with `LogText.clean` before they get here; no token,
/// JWT or key is ever one of them.
public struct AuditEvent: Sendable, Equatable {
    /// `login`, `register`, `revoke`, `admin_revoke`, `token_create`.
    public var event: String
    public var user: String?
    public var host: String?
    public var kid: String?
    public var jti: String?
    /// `accept`, `deny` or `error`.
    public var outcome: String
    /// A `Refusal` raw value or another short code; nil when accepted.
    public var reason: String?
    /// The client's address, or `local` for admin commands.
    public var peer: String?

    public init(event: String, user: String? = nil, host: String? = nil, kid: String? = nil,
                jti: String? = nil, outcome: String, reason: String? = nil, peer: String? = nil) {
        self.event = event
        self.user = user
        self.host = host
        self.kid = kid
        self.jti = jti
        self.outcome = outcome
        self.reason = reason
        self.peer = peer
    }
}

/// What a token says about itself, read before (or without) verification, for the audit
/// row and the log line. Values are cut to printable ASCII and 128 characters.
public struct TokenFacts: Sendable, Equatable {
    public var sub: String?
    public var iss: String?
    public var kid: String?
    public var jti: String?

    public init(sub: String? = nil, iss: String? = nil, kid: String? = nil, jti: String? = nil) {
        self.sub = sub
        self.iss = iss
        self.kid = kid
        self.jti = jti
    }
}

/// The verifier's answer: the facts, and either nothing (accepted) or the refusal.
public struct Verification: Sendable, Equatable {
    public var facts: TokenFacts
    /// nil when the token was accepted.
    public var refusal: Refusal?

    /// True when no refusal was found.
    public var accepted: Bool { refusal == nil }
}

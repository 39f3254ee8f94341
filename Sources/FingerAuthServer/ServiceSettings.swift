/// How new keys become usable.
public enum Approval: String, Sendable {
    /// A key registered with a valid host token and proof is active at once.
    case automatic
    /// New keys stay `pending` until `fingerauthd keys approve --kid KID`.
    case manual
}

/// Everything the service decides besides token verification (`VerifierPolicy`).
public struct ServiceSettings: Sendable {
    public var approval: Approval
    /// Lifetime of an access token issued by /oauth2/token, seconds.
    public var accessTokenTTL: Int64
    /// Refused logins per claimed user (`sub`) before 429.
    public var userLimit: RateLimit
    /// Refused requests per client address before 429.
    public var addressLimit: RateLimit

    public init(approval: Approval = .automatic, accessTokenTTL: Int64 = 300,
                userLimit: RateLimit = RateLimit(failures: 10, window: 300),
                addressLimit: RateLimit = RateLimit(failures: 50, window: 300)) {
        self.approval = approval
        self.accessTokenTTL = accessTokenTTL
        self.userLimit = userLimit
        self.addressLimit = addressLimit
    }
}

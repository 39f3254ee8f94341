import FingerAuthCore

/// The claims of a login token, in this fixed order: `iss`, `sub`, `aud`, `iat`, `nbf` (the
/// same as `iat`), `exp`, `jti`, `amr` (`fpt` and `hwk` or `swk`), `service`, then
/// `client_service` and the configuration's `claim.*` lines. What the authenticator checks
/// of them: fingerauthd(8), VERIFICATION.
public struct LoginClaims: Equatable, Sendable {
    public var issuer: String
    public var subject: String
    public var audience: String
    public var issuedAt: Int64
    public var ttlSeconds: Int
    public var jti: String
    public var service: String
    /// The service an agent's client named (`client_service`), which nobody vouches for; nil
    /// for the module's own logins.
    public var clientService: String?
    public var hardwareKey = false
    public var extra: [(String, String)] = []

    public init(
        issuer: String, subject: String, audience: String, issuedAt: Int64, ttlSeconds: Int,
        jti: String, service: String, extra: [(String, String)] = []
    ) {
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.issuedAt = issuedAt
        self.ttlSeconds = ttlSeconds
        self.jti = jti
        self.service = service
        self.extra = extra
    }

    public static func == (a: LoginClaims, b: LoginClaims) -> Bool { a.json == b.json }

    /// `exp`: `iat + ttl`, saturating (the ttl is at most 300 s by configuration).
    public var expiresAt: Int64 {
        let (sum, overflow) = issuedAt.addingReportingOverflow(Int64(ttlSeconds))
        return overflow ? Int64.max : sum
    }

    public var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("iss", .string(issuer)),
            ("sub", .string(subject)),
            ("aud", .string(audience)),
            ("iat", .integer(issuedAt)),
            ("nbf", .integer(issuedAt)),
            ("exp", .integer(expiresAt)),
            ("jti", .string(jti)),
            ("amr", .array([.string("fpt"), .string(hardwareKey ? "hwk" : "swk")])),
            ("service", .string(service)),
        ]
        if let clientService { members.append(("client_service", .string(clientService))) }
        for (name, value) in extra where !Options.reservedClaims.contains(name) {
            members.append((name, .string(value)))
        }
        return .object(members)
    }

    /// The JOSE header FingerAuth signs with; `typ` says which kind of token it is
    /// (`TokenType`), a login token unless said otherwise.
    public static func header(kid: String, typ: String = TokenType.login) -> JSONValue {
        .object([("alg", .string("RS256")), ("typ", .string(typ)), ("kid", .string(kid))])
    }
}

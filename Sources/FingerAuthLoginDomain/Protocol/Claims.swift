import FingerAuthCore

/// The claims of a login token, in this fixed order: `iss`, `sub`, `aud`, `iat`, `nbf` (the
/// same as `iat`), `exp`, `jti`, `amr` (`fpt` and `hwk` or `swk`), `service`, then
/// `client_service` and the configuration's `claim.*` lines. What the authenticator checks
/// of them: fingerauthd(8), VERIFICATION.
package struct LoginClaims: Equatable, Sendable {
    package var issuer: String
    package var subject: String
    package var audience: String
    package var issuedAt: Int64
    package var ttlSeconds: Int
    package var jti: String
    package var service: String
    /// The service an agent's client named (`client_service`), which nobody vouches for; nil
    /// for the module's own logins.
    package var clientService: String?
    package var hardwareKey = false
    package var extra: [(String, String)] = []

    package init(
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

    package static func == (a: LoginClaims, b: LoginClaims) -> Bool { a.json == b.json }

    /// `exp`: `iat + ttl`, saturating (the ttl is at most 300 s by configuration).
    package var expiresAt: Int64 {
        let (sum, overflow) = issuedAt.addingReportingOverflow(Int64(ttlSeconds))
        return overflow ? Int64.max : sum
    }

    package var json: JSONValue {
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
    package static func header(kid: String, typ: String = TokenType.login) -> JSONValue {
        .object([("alg", .string("RS256")), ("typ", .string(typ)), ("kid", .string(kid))])
    }
}

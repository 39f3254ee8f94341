/// An offline grant: the authenticator's signed permission for one user to log in on one
/// host with one device key while the authenticator cannot be reached, for a while and a
/// number of times. A compact JWS, ES256 with the authenticator's grant key:
///
///     header  {"alg":"ES256","typ":"fingerauth-grant+jwt","kid":<grant key's thumbprint>}
///     claims  {"gid","sub","host","kid","iat","exp","ttl","uses","services"}
///
/// `exp` is the last second of the grant by the authenticator's clock; `ttl` its lifetime
/// counted from when the host received it (on the host's monotonic clock), so that a host
/// whose wall clock is set back gains nothing; `uses` how many offline logins it allows;
/// `services` the PAM services it is for (`*`: any).
package struct OfflineGrant: Equatable, Sendable {
    package var gid: String
    package var user: String
    package var host: String
    package var kid: String
    package var issuedAt: Int64
    package var notAfter: Int64
    package var ttlSeconds: Int64
    package var uses: Int
    package var services: [String]

    package init(
        gid: String, user: String, host: String, kid: String, issuedAt: Int64, notAfter: Int64,
        ttlSeconds: Int64, uses: Int, services: [String]
    ) {
        self.gid = gid
        self.user = user
        self.host = host
        self.kid = kid
        self.issuedAt = issuedAt
        self.notAfter = notAfter
        self.ttlSeconds = ttlSeconds
        self.uses = uses
        self.services = services
    }

    /// The `typ` of a grant's header.
    package static let type = "fingerauth-grant+jwt"
    /// Longest grant a host keeps (a few hundred bytes in practice).
    package static let maxBytes = 4096
    /// Bounds a policy may set: up to 30 days and 1,000 logins.
    package static let maxTTLSeconds: Int64 = 30 * 86400
    package static let maxUses = 1000

    package var claims: JSONValue {
        .object([
            ("gid", .string(gid)), ("sub", .string(user)), ("host", .string(host)), ("kid", .string(kid)),
            ("iat", .integer(issuedAt)), ("exp", .integer(notAfter)), ("ttl", .integer(ttlSeconds)),
            ("uses", .integer(Int64(uses))), ("services", .array(services.map { .string($0) })),
        ])
    }

    package static func header(grantKeyID: String) -> JSONValue {
        .object([("alg", .string("ES256")), ("typ", .string(type)), ("kid", .string(grantKeyID))])
    }

    /// Reads the claims; nil when a member is missing, of the wrong type or out of bounds.
    package init?(claims json: JSONValue) {
        guard let gid = json["gid"]?.stringValue, let user = json["sub"]?.stringValue,
            let host = json["host"]?.stringValue, let kid = json["kid"]?.stringValue,
            let issuedAt = json["iat"]?.int64Value, let notAfter = json["exp"]?.int64Value,
            let ttl = json["ttl"]?.int64Value, let uses = json["uses"]?.int64Value,
            let list = json["services"]?.arrayValue
        else { return nil }
        let services = list.compactMap { $0.stringValue }
        guard !gid.isEmpty, !user.isEmpty, !host.isEmpty, !kid.isEmpty, services.count == list.count,
            !services.isEmpty, notAfter > issuedAt, ttl > 0, ttl <= OfflineGrant.maxTTLSeconds, uses > 0,
            uses <= Int64(OfflineGrant.maxUses)
        else { return nil }
        self.init(
            gid: gid, user: user, host: host, kid: kid, issuedAt: issuedAt, notAfter: notAfter, ttlSeconds: ttl,
            uses: Int(uses), services: services)
    }

    /// Whether the grant is for `service` (`*` or the exact name).
    package func covers(service: String) -> Bool {
        services.contains { $0 == "*" || $0.sameBytes(as: service) }
    }
}

/// Checks an ES256 signature (raw `r || s`, 64 bytes) by a grant key: implemented over
/// OpenSSL in FingerAuthCrypto.
package protocol GrantSignatureCheck {
    func verifyES256(key: GrantKeyJWK, signature: [UInt8], data: [UInt8]) -> Bool
}

/// Why a grant cannot be used; the text goes to the log line, never a token.
package struct GrantRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

extension OfflineGrant {
    /// The grant in `token` once its format, its signature by one of `keys` (by thumbprint)
    /// and its binding to `user`, `host` and `kid` hold.
    package static func verified<Check: GrantSignatureCheck>(
        _ token: String, keys: [String: GrantKeyJWK], check: Check, user: String, host: String,
        kid: String
    ) -> Result<OfflineGrant, GrantRefusal> {
        guard let jws = try? CompactJWT(parsing: token, maxBytes: maxBytes) else {
            return .failure(GrantRefusal("grant is not a JWS"))
        }
        guard jws.header["alg"]?.stringValue == "ES256", jws.header["typ"]?.stringValue == type,
            let keyID = jws.header["kid"]?.stringValue
        else { return .failure(GrantRefusal("grant header is not ES256 \(type)")) }
        guard let key = keys[keyID] else {
            return .failure(GrantRefusal("grant signed by a key this host does not pin"))
        }
        guard check.verifyES256(key: key, signature: jws.signature, data: jws.signingInput) else {
            return .failure(GrantRefusal("grant signature does not verify"))
        }
        guard let grant = OfflineGrant(claims: jws.claims) else {
            return .failure(GrantRefusal("grant claims malformed"))
        }
        guard grant.user.sameBytes(as: user) else { return .failure(GrantRefusal("grant is for another user")) }
        guard grant.host.sameBytes(as: host) else { return .failure(GrantRefusal("grant is for another host")) }
        guard grant.kid.sameBytes(as: kid) else { return .failure(GrantRefusal("grant is for another device key")) }
        return .success(grant)
    }
}

import FingerAuthCore
import FingerAuthCrypto

/// The strict RS256 check of DESIGN.md "Wire format", as plain Swift over injected parts
/// (clock, key directory, replay guard) so that tests drive it without HTTP or SQLite.
///
/// Order: size and shape, header (`alg` exactly RS256, `typ`, no `crit`, `kid`), key
/// binding, signature, then claims (`exp`/`nbf`/`iat` with skew, lifetime, `aud`, `jti`)
/// and last the atomic replay claim, so a refused token never burns its `jti`.
public struct TokenVerifier: Sendable {
    public let policy: VerifierPolicy
    public let clock: any AuthClock
    public let keys: any KeyDirectory
    public let replay: any ReplayGuard

    /// A verifier enforcing `policy` at `clock`'s time, with keys from `keys` and `jti`s in `replay`.
    public init(policy: VerifierPolicy, clock: any AuthClock, keys: any KeyDirectory, replay: any ReplayGuard) {
        self.policy = policy
        self.clock = clock
        self.keys = keys
        self.replay = replay
    }

    /// A login token: `kid` must be active, registered to `sub` and to the host `iss`.
    public func verifyLogin(_ token: String) -> Verification {
        var facts = TokenFacts()
        do throws(Refusal) {
            let jwt = try parse(token)
            facts = Self.facts(of: jwt)
            let kid = try checkHeader(jwt.header)
            let sub = try requiredString(jwt.claims["sub"], missing: .missingSubject)
            let iss = try requiredString(jwt.claims["iss"], missing: .missingIssuer)
            let key: RegisteredKey?
            do { key = try keys.registeredKey(kid: kid) } catch { throw Refusal.unavailable }
            guard let key else { throw Refusal.unknownKid }
            switch key.status {
            case .active: break
            case .pending: throw Refusal.keyPending
            case .revoked: throw Refusal.keyRevoked
            }
            guard key.user == sub else { throw Refusal.kidNotForSubject }
            guard key.host == iss else { throw Refusal.kidNotForIssuer }
            try checkSignature(jwt, jwk: key.jwk)
            try checkClaims(jwt.claims)
            return Verification(facts: facts, refusal: nil)
        } catch {
            return Verification(facts: facts, refusal: error)
        }
    }

    /// A token that proves possession of the key `kid` (DELETE /v1/keys/<kid>): every check
    /// of `verifyLogin` (so it is a one-time, short-lived token for this audience), the
    /// header's `kid` equal to `kid`, and the key active or pending (a pending key may be
    /// withdrawn by its holder).
    public func verifyKeyHolder(_ token: String, kid expected: String) -> Verification {
        var facts = TokenFacts()
        do throws(Refusal) {
            let jwt = try parse(token)
            facts = Self.facts(of: jwt)
            let kid = try checkHeader(jwt.header)
            guard kid == expected else { throw Refusal.kidMismatch }
            let sub = try requiredString(jwt.claims["sub"], missing: .missingSubject)
            let iss = try requiredString(jwt.claims["iss"], missing: .missingIssuer)
            let key: RegisteredKey?
            do { key = try keys.registeredKey(kid: kid) } catch { throw Refusal.unavailable }
            guard let key else { throw Refusal.unknownKid }
            guard key.status != .revoked else { throw Refusal.keyRevoked }
            guard key.user == sub else { throw Refusal.kidNotForSubject }
            guard key.host == iss else { throw Refusal.kidNotForIssuer }
            try checkSignature(jwt, jwk: key.jwk)
            try checkClaims(jwt.claims)
            return Verification(facts: facts, refusal: nil)
        } catch {
            return Verification(facts: facts, refusal: error)
        }
    }

    /// What `token` claims about itself, unverified (for rate limiting before the work);
    /// empty facts for anything that does not parse.
    public func peek(_ token: String) -> TokenFacts {
        guard let jwt = try? parse(token) else { return TokenFacts() }
        return Self.facts(of: jwt)
    }

    /// A registration proof: signed by the key being registered (`kid` its RFC 7638
    /// thumbprint), `iss` the host and `sub` the user being registered.
    public func verifyProof(_ token: String, jwk: JWK, user: String, host: String) -> Verification {
        var facts = TokenFacts()
        do throws(Refusal) {
            let jwt = try parse(token)
            facts = Self.facts(of: jwt)
            let kid = try checkHeader(jwt.header)
            guard let thumbprint = Digest.thumbprint(of: jwk) else { throw Refusal.unavailable }
            guard kid == thumbprint else { throw Refusal.kidNotThumbprint }
            let sub = try requiredString(jwt.claims["sub"], missing: .missingSubject)
            let iss = try requiredString(jwt.claims["iss"], missing: .missingIssuer)
            try checkSignature(jwt, jwk: jwk)
            guard sub == user else { throw Refusal.wrongSubject }
            guard iss == host else { throw Refusal.wrongIssuer }
            try checkClaims(jwt.claims)
            return Verification(facts: facts, refusal: nil)
        } catch {
            return Verification(facts: facts, refusal: error)
        }
    }

    // MARK: - Steps

    private func parse(_ token: String) throws(Refusal) -> CompactJWT {
        guard token.utf8.count <= policy.maxTokenBytes else { throw .tooLarge }
        do {
            return try CompactJWT(parsing: token, maxBytes: policy.maxTokenBytes)
        } catch .tooLarge {
            throw .tooLarge
        } catch {
            throw .malformed
        }
    }

    /// The header's `kid` once `alg`, `typ` and `crit` are acceptable.
    private func checkHeader(_ header: JSONValue) throws(Refusal) -> String {
        guard header["alg"]?.stringValue == "RS256" else { throw .algorithm }
        if let typ = header["typ"] {
            guard typ.stringValue == "JWT" else { throw .type }
        }
        // RFC 7515 §4.1.11: a `crit` we do not understand must be refused; we understand none.
        guard header["crit"] == nil else { throw .critical }
        guard let kid = header["kid"]?.stringValue, !kid.isEmpty, kid.utf8.count <= 128 else { throw .missingKid }
        return kid
    }

    private func checkSignature(_ jwt: CompactJWT, jwk: JWK) throws(Refusal) {
        let key: RSAPublicKey
        do { key = try RSAPublicKey(jwk: jwk) } catch { throw .unusableKey }
        guard key.verifyRS256(signature: jwt.signature, data: jwt.signingInput) else { throw .signature }
    }

    /// Time, lifetime, audience, `jti`, and finally the replay claim.
    private func checkClaims(_ claims: JSONValue) throws(Refusal) {
        let now = clock.now()
        let skew = policy.skew
        guard let exp = claims["exp"]?.int64Value, let iat = claims["iat"]?.int64Value else { throw .timeClaim }
        var nbf: Int64?
        if let value = claims["nbf"] {
            guard let n = value.int64Value else { throw .timeClaim }
            nbf = n
        }
        // Written so that no sum can overflow: `now` is a sane time, the claims are not.
        guard exp > now - skew else { throw .expired }
        if let nbf { guard nbf <= now + skew else { throw .notYetValid } }
        guard iat <= now + skew else { throw .issuedInFuture }
        let (lifetime, overflow) = exp.subtractingReportingOverflow(iat)
        guard !overflow, lifetime > 0 else { throw .lifetime }
        guard lifetime <= policy.maxTTL else { throw .ttlTooLong }
        guard Self.audienceMatches(claims["aud"], policy.audience) else { throw .audience }
        guard let jti = claims["jti"] else { throw .missingJTI }
        guard let text = jti.stringValue, Self.isPrintableASCII(text),
              !text.isEmpty, text.utf8.count <= policy.maxJTIBytes else { throw .badJTI }
        let fresh: Bool
        do {
            fresh = try replay.claimOnce(jti: text, exp: exp, purgeBefore: now - skew - policy.maxTTL)
        } catch {
            throw .unavailable
        }
        guard fresh else { throw .replayed }
    }

    private func requiredString(_ value: JSONValue?, missing: Refusal) throws(Refusal) -> String {
        guard let text = value?.stringValue, !text.isEmpty else { throw missing }
        return text
    }

    /// `aud` is the audience itself, or an array of strings that contains it (RFC 7519 §4.1.3).
    static func audienceMatches(_ aud: JSONValue?, _ audience: String) -> Bool {
        switch aud {
        case let .string(s)?: return s == audience
        case let .array(items)?:
            guard items.allSatisfy({ $0.stringValue != nil }) else { return false }
            return items.contains(.string(audience))
        default: return false
        }
    }

    static func isPrintableASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    /// The claimed identities, cleaned for the audit row and the log line.
    static func facts(of jwt: CompactJWT) -> TokenFacts {
        TokenFacts(sub: jwt.claims["sub"]?.stringValue.map { LogText.clean($0) },
                   iss: jwt.claims["iss"]?.stringValue.map { LogText.clean($0) },
                   kid: jwt.header["kid"]?.stringValue.map { LogText.clean($0) },
                   jti: jwt.claims["jti"]?.stringValue.map { LogText.clean($0) })
    }
}

import FingerAuthCore
import FingerAuthKeyFormats

/// The strict RS256 check of every token the authenticator takes — login tokens,
/// revocation tokens and registration proofs — as one routine over injected parts (clock,
/// keys), so that tests drive it without HTTP or a database.
///
/// Order: size and shape, header (`alg` exactly RS256, `typ` of the endpoint's kind, no
/// `crit`, a well-formed `kid`), for a login a `sub` that is a valid user name, the key, the signature — everything before this point is
/// `unverified` and tells the sender nothing — then the key's status and binding (`sub`,
/// `iss`, compared byte for byte) and the claims (`exp`/`nbf`/`iat` with skew, lifetime,
/// `aud`, `jti`). The `jti` is claimed and the status read again later, in the write
/// transaction, so a refused token never burns its `jti`.
package struct TokenVerifier: Sendable {
    package let policy: VerifierPolicy
    package let clock: any AuthClock
    package let keys: KeyCache

    package init(policy: VerifierPolicy, clock: any AuthClock, keys: KeyCache) {
        self.policy = policy
        self.clock = clock
        self.keys = keys
    }

    /// A verifier over `directory` (tests).
    package init(
        policy: VerifierPolicy, clock: any AuthClock, keys directory: any KeyDirectory, crypto: any AuthenticatorCrypto
    ) {
        self.init(policy: policy, clock: clock, keys: KeyCache(directory, crypto: crypto))
    }

    /// Checks `token` as a token of `purpose`.
    package func check(_ token: String, for purpose: TokenPurpose) -> TokenCheck {
        guard let jwt = parse(token) else {
            return .unverified(token.utf8.count > policy.maxTokenBytes ? .tooLarge : .malformed, TokenFacts())
        }
        let facts = Self.facts(of: jwt)
        // Before the signature: unverified.
        let kid: String
        do throws(Refusal) { kid = try checkHeader(jwt.header, type: purpose.type) } catch {
            return .unverified(error, facts)
        }
        // A login for a name no key can have (the one user-name rule): refused before any
        // lookup or signature, with a reason anyone may hear, since the rule is public.
        if purpose == .login, let sub = jwt.claims["sub"]?.stringValue, !UserName.isValid(sub) {
            return .unverified(.invalidUserName, facts)
        }
        let identity: VerifiedIdentity
        let publicKey: any SignatureKey
        switch purpose {
        case let .proof(jwk, thumbprint, user, host):
            guard kid.sameBytes(as: thumbprint) else { return .unverified(.kidNotThumbprint, facts) }
            guard let key = keys.crypto.signatureKey(jwk) else { return .unverified(.unusableKey, facts) }
            publicKey = key
            identity = VerifiedIdentity(kid: kid, user: user, host: host, status: .pending)
        case let .hostProof(jwk, thumbprint, host):
            guard kid.sameBytes(as: thumbprint) else { return .unverified(.kidNotThumbprint, facts) }
            guard let key = keys.crypto.signatureKey(jwk) else { return .unverified(.unusableKey, facts) }
            publicKey = key
            // A host proves itself: subject and issuer are both the host.
            identity = VerifiedIdentity(kid: kid, user: host, host: host, status: .pending)
        case .login, .revocation:
            if case let .revocation(expected) = purpose, !kid.sameBytes(as: expected) {
                return .unverified(.kidMismatch, facts)
            }
            let found: (RegisteredKey, (any SignatureKey)?)?
            do { found = try keys.lookup(kid, now: clock.now()) } catch { return .unavailable(facts) }
            guard let (key, parsed) = found else { return .unverified(.unknownKid, facts) }
            guard let parsed else { return .unverified(.unusableKey, facts) }
            publicKey = parsed
            identity = VerifiedIdentity(
                kid: key.kid, user: key.user, host: key.host, status: key.status, kind: key.kind,
                ek: key.ek)
        }
        guard publicKey.verifyRS256(signature: jwt.signature, data: jwt.signingInput) else {
            return .unverified(.signature, facts)
        }
        // Signed by the key: from here on the holder hears the reason.
        do throws(Refusal) {
            if !purpose.allowed.contains(identity.status) {
                throw identity.status == .revoked ? Refusal.keyRevoked : Refusal.keyPending
            }
            let sub = try requiredString(jwt.claims["sub"], missing: .missingSubject)
            let iss = try requiredString(jwt.claims["iss"], missing: .missingIssuer)
            if purpose.provesNewKey {
                guard sub.sameBytes(as: identity.user) else { throw Refusal.wrongSubject }
                guard iss.sameBytes(as: identity.host) else { throw Refusal.wrongIssuer }
            } else {
                guard sub.sameBytes(as: identity.user) else { throw Refusal.kidNotForSubject }
                guard iss.sameBytes(as: identity.host) else { throw Refusal.kidNotForIssuer }
            }
            let (jti, exp) = try checkClaims(jwt.claims)
            var service: String?
            var clientService: String?
            if purpose == .login {
                let name = try requiredString(jwt.claims["service"], missing: .missingService)
                guard ServiceName.isValid(name) else { throw Refusal.badService }
                service = name
                if let claimed = jwt.claims["client_service"] {
                    guard let word = claimed.stringValue, ServiceName.isValid(word) else {
                        throw Refusal.badService
                    }
                    clientService = word
                }
                try checkMethods(jwt.claims["amr"], kind: identity.kind)
            }
            return .valid(
                VerifiedToken(identity: identity, jti: jti, exp: exp, service: service, clientService: clientService),
                facts)
        } catch {
            return .refused(error, identity, facts)
        }
    }

    /// The user and host a login token names, unverified: what a login's reads are
    /// fetched by before the signature is checked (`LoginReads`). nil when it is no token,
    /// or names no valid user name or no issuer of at most 255 bytes.
    package func claimedIdentity(_ token: String) -> (user: String, host: String)? {
        guard let jwt = parse(token), let sub = jwt.claims["sub"]?.stringValue, UserName.isValid(sub),
            let iss = jwt.claims["iss"]?.stringValue, !iss.isEmpty, iss.utf8.count <= 255
        else { return nil }
        return (sub, iss)
    }

    // MARK: - Steps

    func parse(_ token: String) -> CompactJWT? {
        guard token.utf8.count <= policy.maxTokenBytes else { return nil }
        return try? CompactJWT(parsing: token, maxBytes: policy.maxTokenBytes)
    }

    /// The header's `kid` once `alg`, `typ` and `crit` are acceptable.
    func checkHeader(_ header: JSONValue, type: String) throws(Refusal) -> String {
        guard let alg = header["alg"]?.stringValue, alg.sameBytes(as: "RS256") else { throw .algorithm }
        // RFC 8725 §3.11: every kind of token names its own type; a token of another kind
        // (or of none) is not taken here.
        guard let typ = header["typ"]?.stringValue, typ.sameBytes(as: type) else { throw .type }
        // RFC 7515 §4.1.11: a `crit` we do not understand must be refused; we understand none.
        guard header["crit"] == nil else { throw .critical }
        guard let kid = header["kid"]?.stringValue else { throw .missingKid }
        guard Self.isWellFormedKid(kid) else { throw .badKid }
        return kid
    }

    /// A kid as fingerauthd issues them: an RFC 7638 SHA-256 thumbprint, 43 base64url
    /// characters. Anything else — a NUL, a non-ASCII byte, a path — is refused before any
    /// lookup, the same on every store.
    package static func isWellFormedKid(_ kid: String) -> Bool {
        kid.utf8.count == 43 && kid.utf8.allSatisfy(Base64URL.isAlphabet)
    }

    /// `amr` (RFC 8176) may be absent; `hwk` in it is believed only of an attested TPM key.
    private func checkMethods(_ amr: JSONValue?, kind: KeyOrigin) throws(Refusal) {
        guard let methods = amr?.arrayValue else { return }
        let claimsHardware = methods.contains { $0.stringValue.map { $0.sameBytes(as: "hwk") } ?? false }
        if claimsHardware && kind != .attestedTPM { throw Refusal.hardwareClaimUnattested }
    }

    /// Time, lifetime, audience and the `jti`'s shape; returns the `jti` and `exp`.
    func checkClaims(_ claims: JSONValue, maxLifetime: Int64? = nil) throws(Refusal) -> (String, Int64) {
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
        guard lifetime <= min(policy.maxTTL, maxLifetime ?? policy.maxTTL) else { throw .ttlTooLong }
        guard Self.audienceMatches(claims["aud"], policy.audience) else { throw .audience }
        guard let jti = claims["jti"] else { throw .missingJTI }
        guard let text = jti.stringValue, Self.isClaimWord(text, maxBytes: policy.maxJTIBytes) else { throw .badJTI }
        return (text, exp)
    }

    func requiredString(_ value: JSONValue?, missing: Refusal) throws(Refusal) -> String {
        guard let text = value?.stringValue, !text.isEmpty else { throw missing }
        return text
    }

    /// `aud` is the audience itself, or an array of strings that contains it (RFC 7519
    /// §4.1.3), compared byte for byte.
    static func audienceMatches(_ aud: JSONValue?, _ audience: String) -> Bool {
        switch aud {
        case let .string(s)?: return s.sameBytes(as: audience)
        case let .array(items)?:
            guard items.allSatisfy({ $0.stringValue != nil }) else { return false }
            return items.contains { $0.stringValue?.sameBytes(as: audience) == true }
        default: return false
        }
    }

    /// A word a token or an offline record may carry (`jti`, `service`, `client_service`,
    /// `gid`): not empty, at most `maxBytes` bytes, printable ASCII without spaces — nothing
    /// that could steer a terminal or forge a line where an admin reads it.
    package static func isClaimWord(_ text: String, maxBytes: Int = 64) -> Bool {
        !text.isEmpty && text.utf8.count <= maxBytes && isPrintableASCII(text)
    }

    static func isPrintableASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    /// The claimed identities, cleaned for the audit row and the log line.
    static func facts(of jwt: CompactJWT) -> TokenFacts {
        TokenFacts(
            sub: jwt.claims["sub"]?.stringValue.map { LogText.clean($0) },
            iss: jwt.claims["iss"]?.stringValue.map { LogText.clean($0) },
            kid: jwt.header["kid"]?.stringValue.map { LogText.clean($0) },
            jti: jwt.claims["jti"]?.stringValue.map { LogText.clean($0) })
    }
}

import FingerAuthCore
import FingerAuthKeyFormats

/// The tokens of remote approval, each of a `typ` of its own, so that none is taken for
/// another: a host's request and its calls about it are signed by its host key (never a
/// user's), a workstation's watch and a person's decision by the user's device key (never a
/// host's).
package enum SignedCall: Sendable, Equatable {
    /// `POST /v1/approvals`: `sub` is the user asked for.
    case approvalRequest
    /// `GET`/`DELETE /v1/approvals/<id>`: `sub` is the host itself.
    case hostCall
    /// `GET /v1/approvals/watch`: a device key's, `sub` its user.
    case watch
    /// `POST /v1/approvals/<id>/decision`: a device key's, `sub` its user.
    case decision

    /// The `typ` its header must carry.
    package var type: String {
        switch self {
        case .approvalRequest: return TokenType.approvalRequest
        case .hostCall: return TokenType.hostCall
        case .watch: return TokenType.watch
        case .decision: return TokenType.approvalDecision
        }
    }

    /// Largest `exp - iat`, seconds (and never beyond `--max-ttl`): an approval lives at
    /// most a minute; a watch token is renewed every few minutes.
    package var maxLifetime: Int64 {
        switch self {
        case .watch: return 300
        case .approvalRequest, .hostCall, .decision: return 60
        }
    }

    /// Whether a host key signs it (else a user's device key).
    package var signedByHost: Bool { self == .approvalRequest || self == .hostCall }
}

/// A verified call: the key that signed it (for a host key, `identity.user` is the user an
/// approval request asks for, and empty otherwise) and its claims.
package struct VerifiedCall: Sendable, Equatable {
    package var identity: VerifiedIdentity
    package var jti: String
    package var exp: Int64
    package var claims: JSONValue

    /// Until when the jti is kept: the fleet's one replay window.
    package var keepUntil: Int64 { ReplayWindow.keepUntil(exp: exp) }
}

/// The verifier's answer about a call, as `TokenCheck` says it about a login token.
package enum CallCheck: Sendable, Equatable {
    case unverified(Refusal, TokenFacts)
    case refused(Refusal, VerifiedIdentity, TokenFacts)
    case valid(VerifiedCall, TokenFacts)
    case unavailable(TokenFacts)

    package var facts: TokenFacts {
        switch self {
        case let .unverified(_, facts), let .refused(_, _, facts), let .valid(_, facts), let .unavailable(facts):
            return facts
        }
    }
}

extension TokenVerifier {
    /// Checks `token` as a call of `kind`, in the order of every token: shape, header, the
    /// key (a host key from `hostKeys`, a device key from the registry), the signature —
    /// unverified until here —, then the key's status (active only), its binding (`iss` the
    /// key's host; `sub` the key's user, or for a host the host itself, or for a request a
    /// valid user name) and the claims, the lifetime at most `kind.maxLifetime`.
    package func check(_ token: String, call kind: SignedCall, hostKeys: any HostKeyRegistry) -> CallCheck {
        guard let jwt = parse(token) else {
            return .unverified(token.utf8.count > policy.maxTokenBytes ? .tooLarge : .malformed, TokenFacts())
        }
        let facts = Self.facts(of: jwt)
        let kid: String
        do throws(Refusal) { kid = try checkHeader(jwt.header, type: kind.type) } catch {
            return .unverified(error, facts)
        }
        var identity: VerifiedIdentity
        let publicKey: any SignatureKey
        if kind.signedByHost {
            let found: RegisteredHostKey?
            do { found = try hostKeys.hostKey(kid: kid) } catch { return .unavailable(facts) }
            guard let key = found else { return .unverified(.unknownKid, facts) }
            guard let parsed = keys.crypto.signatureKey(key.jwk) else { return .unverified(.unusableKey, facts) }
            publicKey = parsed
            identity = VerifiedIdentity(
                kid: key.kid, user: "", host: key.host, status: key.status, kind: key.kind, ek: key.ek)
        } else {
            let found: (RegisteredKey, (any SignatureKey)?)?
            // Read afresh: a watch is checked by no write transaction, and a revoked key must
            // stop watching at once, not when the cache next reads it.
            do { found = try keys.lookup(kid, now: clock.now(), fresh: kind == .watch) } catch {
                return .unavailable(facts)
            }
            guard let (key, parsed) = found else { return .unverified(.unknownKid, facts) }
            guard let parsed else { return .unverified(.unusableKey, facts) }
            publicKey = parsed
            identity = VerifiedIdentity(
                kid: key.kid, user: key.user, host: key.host, status: key.status, kind: key.kind, ek: key.ek)
        }
        guard publicKey.verifyRS256(signature: jwt.signature, data: jwt.signingInput) else {
            return .unverified(.signature, facts)
        }
        do throws(Refusal) {
            guard identity.status == .active else {
                throw identity.status == .revoked ? Refusal.keyRevoked : Refusal.keyPending
            }
            let sub = try requiredString(jwt.claims["sub"], missing: .missingSubject)
            let iss = try requiredString(jwt.claims["iss"], missing: .missingIssuer)
            guard iss.sameBytes(as: identity.host) else { throw Refusal.kidNotForIssuer }
            switch kind {
            case .approvalRequest:
                guard UserName.isValid(sub) else { throw Refusal.invalidUserName }
                identity.user = sub
            case .hostCall:
                guard sub.sameBytes(as: identity.host) else { throw Refusal.kidNotForSubject }
            case .watch, .decision:
                guard sub.sameBytes(as: identity.user) else { throw Refusal.kidNotForSubject }
            }
            let (jti, exp) = try checkClaims(jwt.claims, maxLifetime: kind.maxLifetime)
            return .valid(VerifiedCall(identity: identity, jti: jti, exp: exp, claims: jwt.claims), facts)
        } catch {
            return .refused(error, identity, facts)
        }
    }
}

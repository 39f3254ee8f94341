import FingerAuthCore

/// What a token says about itself, read before (or without) verification, for the audit
/// row and the log line. Values are cut to printable ASCII and 128 characters.
package struct TokenFacts: Sendable, Equatable {
    package var sub: String?
    package var iss: String?
    package var kid: String?
    package var jti: String?

    package init(sub: String? = nil, iss: String? = nil, kid: String? = nil, jti: String? = nil) {
        self.sub = sub
        self.iss = iss
        self.kid = kid
        self.jti = jti
    }
}

/// Which kind of token an endpoint takes, with what it must be bound to.
package enum TokenPurpose: Sendable, Equatable {
    /// A login token (`/v1/login`, `/login`, the `/oauth2/token` grant): its key active and
    /// registered to its `sub` and `iss`.
    case login
    /// A key holder's revocation of `kid` (`DELETE /v1/keys/<kid>`): signed by that very key,
    /// active or pending.
    case revocation(kid: String)
    /// A registration proof (`POST /v1/keys`): signed by the key being registered (`jwk`,
    /// whose RFC 7638 thumbprint is `kid`), for `user` on `host`.
    case proof(jwk: JWK, kid: String, user: String, host: String)
    /// A host key's registration proof (`POST /v1/hosts/keys`): signed by the host key being
    /// registered (`jwk`, thumbprint `kid`), `sub` and `iss` both `host`.
    case hostProof(jwk: JWK, kid: String, host: String)

    /// Whether the token proves the key it brings (a registration), rather than one the
    /// registry holds: its `sub` and `iss` are those being registered.
    var provesNewKey: Bool {
        switch self {
        case .proof, .hostProof: return true
        case .login, .revocation: return false
        }
    }

    /// The `typ` the token's header must carry.
    var type: String {
        switch self {
        case .login: return TokenType.login
        case .revocation: return TokenType.keyRevocation
        case .proof: return TokenType.registrationProof
        case .hostProof: return TokenType.hostKeyProof
        }
    }

    /// Key states a token of this kind may be signed with.
    var allowed: [KeyStatus] {
        switch self {
        case .login: return [.active]
        case .revocation: return [.active, .pending]
        case .proof: return [.active, .pending, .revoked]
        case .hostProof: return [.active, .pending, .revoked]
        }
    }
}

/// The key a token's signature verified with: from here on the request's identity is
/// proved — refusals count against this user, not only the client's address.
package struct VerifiedIdentity: Sendable, Equatable {
    package var kid: String
    /// The user and host the key is registered to (for a proof: those being registered).
    package var user: String
    package var host: String
    /// The key's status as read before the write (the write transaction reads it again).
    package var status: KeyStatus
    /// Where the registered key lives, as registration proved (a proof's key: software
    /// until its attestation is checked).
    package var kind: KeyOrigin = .software
    /// The EK that attested the registered key, if recorded.
    package var ek: String? = nil
}

/// A token that passed every check but the two the write transaction makes (the key's
/// status now, and its `jti` unused).
package struct VerifiedToken: Sendable, Equatable {
    package var identity: VerifiedIdentity
    package var jti: String
    package var exp: Int64
    /// The PAM service a login token names (`service`, required in login tokens); nil for
    /// the other kinds.
    package var service: String? = nil
    /// The service an agent's client named (`client_service`, optional): untrusted, for the
    /// audit row only; policy never reads it.
    package var clientService: String? = nil

    /// Until when the jti is kept: the fleet's one replay window.
    package var keepUntil: Int64 { ReplayWindow.keepUntil(exp: exp) }
}

/// The verifier's answer.
package enum TokenCheck: Sendable, Equatable {
    /// Refused before its signature verified with a registered key: nothing about the
    /// sender is known, so the answer says only `invalid_token`; the reason is for the audit
    /// row and the log.
    case unverified(Refusal, TokenFacts)
    /// Signed by the registered key of `identity`, refused for a reason its holder may hear.
    case refused(Refusal, VerifiedIdentity, TokenFacts)
    /// Ready for its write transaction.
    case valid(VerifiedToken, TokenFacts)
    /// The registry could not be read: `unavailable`, never an accept.
    case unavailable(TokenFacts)

    package var facts: TokenFacts {
        switch self {
        case let .unverified(_, facts), let .refused(_, _, facts), let .valid(_, facts), let .unavailable(facts):
            return facts
        }
    }
}

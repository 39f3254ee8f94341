import FingerAuthCore

/// How one operation of the service ended, in the registry's words. The transport turns
/// it into an answer on the wire (`AnswerMapping`, FingerAuthTransport): which status, which
/// headers, which body. The domain decides what happened; how that is said is not its job.
package enum Outcome: Sendable, Equatable {
    // What went through.

    /// The store's health: available, or not.
    case health(storeAvailable: Bool)
    /// The counters for monitoring, already rendered (`Metrics.render`).
    case metrics(String)
    /// A login token accepted and its jti used up.
    case loggedIn(LoginAccepted)
    /// An OAuth access token issued for an accepted assertion: the token and its lifetime.
    case accessTokenIssued(token: String, lifetime: Int64)
    /// What an access token is now: the state of an active one, or nil (inactive).
    case introspected(AccessTokenState?)
    /// A key registered (`new`) or the same key again.
    case registered(KeyRegistered)
    /// A key revoked (or, with its host's token, already revoked).
    case revoked
    /// A key as the registry holds it.
    case keyStatus(RegisteredKey)
    /// A TPM attestation challenge issued.
    case challengeIssued(IssuedChallenge)
    /// The policy allows the request asked about, by `rule` (nil: no rule matched).
    case policyAllows(rule: Int64?)
    /// An offline sync answered.
    case offlineSynced(OfflineSyncReport)
    /// A remote approval recorded as pending (201), with the authenticator's clock and the
    /// user's workstations (the hosts of their active keys), which the host's prompt names.
    case approvalOpened(ApprovalRecord, serverTime: Int64, workstations: [String])
    /// Where an approval stands, for the host that asked.
    case approvalState(ApprovalRecord, serverTime: Int64)
    /// A user's pending approvals, for a workstation's watch.
    case approvalsWatched([ApprovalRecord], serverTime: Int64)
    /// A decision taken: the approval is now `status`.
    case approvalDecided(ApprovalStatus)

    // What did not.

    /// The request's form was refused before anything was looked up.
    case malformed(Malformation)
    /// A token that did not verify with a registered key: one outcome for all of them.
    case unverifiedToken
    /// A verified token refused, with the reason.
    case tokenRefused(Refusal)
    /// A registration's proof refused (`AuditReason.proof`), or replayed.
    case proofRefused(AuditReason)
    /// The credential for the operation was missing or wrong.
    case badCredential(Credential)
    /// Refused by a rule of the registry: another host's key, hardware keys required, an
    /// attestation refused, … (the reason's `text` names it).
    case forbidden(AuditReason)
    /// Refused by the central policy, by `rule`.
    case policyDenied(rule: Int64?)
    /// A registration that collides with what the registry holds (the reason names it).
    case conflict(AuditReason)
    /// No such key.
    case unknownKey
    /// This operation is not offered here (offline sync with no grant key and no grant).
    case notOffered
    /// Past a limit: try again in `retryAfter` seconds.
    case tooMany(retryAfter: Int64)
    /// Too many attestation challenges pending (for the host, or at all).
    case tooManyChallenges
    /// A remote approval refused for a reason of its own.
    case approvalRefused(ApprovalRefusal)
    /// The registry or a resource could not answer: nothing was decided.
    case unavailable
    /// A host key registered (`new`), or the same host key again (nothing written).
    case hostKeyRegistered(RegisteredHostKey, new: Bool)
}

/// Why a remote approval's request or decision was refused, as its client hears it.
package enum ApprovalRefusal: Sendable, Equatable {
    /// The user has another approval pending (409).
    case pending
    /// The user denied an approval lately: requests are muted for `retryAfter` s (429).
    case muted(retryAfter: Int64)
    /// No such approval, or not the caller's (404).
    case unknown
    /// It is no longer pending: decided, withdrawn or expired (409, with the status).
    case closed(ApprovalStatus)
    /// The decision names another user (403).
    case notYours
    /// The decision names another host, service, client, nonce or code than the approval (403).
    case mismatch

    /// The reason an audit row and the answer's `error` carry.
    package var code: ReasonCode {
        switch self {
        case .pending: return .approvalPending
        case .muted: return .approvalMuted
        case .unknown: return .approvalUnknown
        case .closed: return .approvalClosed
        case .notYours: return .notYourApproval
        case .mismatch: return .approvalMismatch
        }
    }
}

/// What was wrong with a request's form.
package enum Malformation: Sendable, Equatable {
    /// The body went past `AuthenticatorService.maxBodyBytes`.
    case bodyTooLarge
    /// The body is not of the operation's media type.
    case mediaType
    /// The body is not strict JSON.
    case json
    /// A member or parameter is missing, repeated or of the wrong shape.
    case request
    /// `name`, found in `field` (`user`, `sub`), breaks the user-name rule (`UserName`).
    case userName(String, field: String)
    /// A registration's `jwk` is not an RSA key of 2048 bits or more.
    case jwk
    /// A TPM attestation that does not parse.
    case attestation
    /// An OAuth grant of a type other than the JWT bearer grant.
    case grantType
}

/// Which credential was refused.
package enum Credential: Sendable, Equatable {
    /// A host's enrollment token.
    case hostToken
    /// The metrics token (`metrics-token-file`).
    case metricsToken
}

/// An accepted login: who, with which key and token, and the offline grant that goes with it.
package struct LoginAccepted: Sendable, Equatable {
    package var user: String
    package var kid: String
    package var jti: String
    /// Where a grant key is configured: the grant this login earned and the keys to pin.
    package var offline: OfflineAllowance?

    package init(user: String, kid: String, jti: String, offline: OfflineAllowance?) {
        self.user = user
        self.kid = kid
        self.jti = jti
        self.offline = offline
    }
}

/// What a login's answer says of offline grants where a grant key is configured.
package struct OfflineAllowance: Sendable, Equatable {
    /// The signed grant (a compact JWS), or nil: the host drops the one it holds.
    package var grant: String?
    /// The grant keys hosts pin, as JWKs.
    package var keys: JSONValue

    package init(grant: String?, keys: JSONValue) {
        self.grant = grant
        self.keys = keys
    }
}

/// A registration that went through.
package struct KeyRegistered: Sendable, Equatable {
    package var kid: String
    package var status: KeyStatus
    /// True for a new key; false for the same key again (nothing written).
    package var new: Bool
    /// The grant keys for the host to pin, where a grant key is configured.
    package var grantKeys: JSONValue?

    package init(kid: String, status: KeyStatus, new: Bool, grantKeys: JSONValue?) {
        self.kid = kid
        self.status = status
        self.new = new
        self.grantKeys = grantKeys
    }
}

/// A TPM attestation challenge: its id, the wrapped credential (TPM2_MakeCredential) and
/// the nonce the certification must cover, each member still binary.
package struct IssuedChallenge: Sendable, Equatable {
    package var id: String
    package var credentialBlob: [UInt8]
    package var encryptedSecret: [UInt8]
    package var nonce: [UInt8]
    /// Seconds the challenge may be answered in.
    package var lifetime: Int64

    package init(id: String, credentialBlob: [UInt8], encryptedSecret: [UInt8], nonce: [UInt8], lifetime: Int64) {
        self.id = id
        self.credentialBlob = credentialBlob
        self.encryptedSecret = encryptedSecret
        self.nonce = nonce
        self.lifetime = lifetime
    }
}

/// An offline sync's answer: each grant asked about, the records held and those rejected
/// (by key id, their sequence numbers), and the grant keys where one is configured.
package struct OfflineSyncReport: Sendable, Equatable {
    package var grants: [(gid: String, state: GrantState)]
    package var held: [String: [Int64]]
    package var rejected: [String: [Int64]]
    package var grantKeys: JSONValue?

    package init(
        grants: [(gid: String, state: GrantState)], held: [String: [Int64]], rejected: [String: [Int64]],
        grantKeys: JSONValue? = nil
    ) {
        self.grants = grants
        self.held = held
        self.rejected = rejected
        self.grantKeys = grantKeys
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.grants.map(\.gid) == rhs.grants.map(\.gid) && lhs.grants.map(\.state) == rhs.grants.map(\.state)
            && lhs.held == rhs.held && lhs.rejected == rhs.rejected && lhs.grantKeys == rhs.grantKeys
    }
}

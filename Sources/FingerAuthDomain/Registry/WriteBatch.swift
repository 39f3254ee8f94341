/// The writes of a request as the group commit takes them: each item is one of the
/// few things the request path ever writes. A batch of items from many requests runs in
/// one transaction and becomes durable with one commit.
package enum WriteItem: Sendable {
    /// A verified token's use: see `TokenClaim`.
    case claim(TokenClaim)
    /// One audit row at `time`, nothing else.
    case audit(AuditEvent, time: Int64)
    /// Refused requests of one address counted together: adds `count` to the `refusals` row
    /// of (`peer`, `window`) — one row per address and window, whatever the flood.
    case refusals(peer: String, window: Int64, count: Int64, reason: ReasonCode)
    /// One failure for a shared rate-limit key (PostgreSQL): in its open window, or in a new
    /// one of `window` seconds from `now`.
    case failure(key: String, now: Int64, window: Int64)
    /// One key's offline records of one upload (`OfflineGrantStore.storeOfflineRecords`).
    case offlineRecords(OfflineUpload)
}

/// What a verified token does to the registry, in one transaction: the key is read again
/// (it must still be registered to `user` and `host` and be in one of `allowed`), the
/// `jti` is claimed until `keepUntil`, the effect applied, and `audit` written with the
/// outcome. A revocation that committed before this transaction is seen by it; one that
/// commits after it finds the jti already used — no token is accepted after a revocation.
package struct TokenClaim: Sendable {
    package var kid: String
    package var user: String
    package var host: String
    package var jti: String
    /// The jti is kept until this time (seconds since the epoch, the database's clock).
    package var keepUntil: Int64
    /// Key states that accept the token: `[.active]` for logins, `[.active, .pending]` for
    /// a key holder's own revocation.
    package var allowed: [KeyStatus]
    /// What an accepted token does besides using up its jti.
    package var effect: ClaimEffect
    /// The row to write; its `outcome` and `reason` are set by the transaction.
    package var audit: AuditEvent
    /// The reason written on acceptance (nil for a plain login).
    package var acceptReason: AuditReason?
    package var time: Int64

    package init(
        kid: String, user: String, host: String, jti: String, keepUntil: Int64, allowed: [KeyStatus],
        effect: ClaimEffect = .none, audit: AuditEvent, acceptReason: AuditReason? = nil, time: Int64
    ) {
        self.kid = kid
        self.user = user
        self.host = host
        self.jti = jti
        self.keepUntil = keepUntil
        self.allowed = allowed
        self.effect = effect
        self.audit = audit
        self.acceptReason = acceptReason
        self.time = time
    }
}

/// What an accepted `TokenClaim` does besides using up its jti.
package enum ClaimEffect: Sendable, Equatable {
    case none
    /// Stores the SHA-256 (hex) of an OAuth access token issued for the key, valid until `expires`.
    case accessToken(sha256: String, expires: Int64)
    /// Revokes the key itself (its holder's own revocation).
    case revokeKey
    /// An accepted login at `/v1/login` on an authenticator that issues offline grants: the
    /// key's live grants are withdrawn and, when the policy allows one, `grant` recorded in
    /// their place.
    case offlineGrant(IssuedGrant?)
}

/// How one item of a batch ended. A batch that fails as a whole throws instead: every
/// request in it ends in `unavailable` and none is accepted.
package enum WriteOutcome: Sendable, Equatable {
    /// An audit row, a refusal count or a failure count was written.
    case written
    /// The claim was accepted (and its effect applied).
    case accepted
    /// The claim was refused inside the transaction; the audit row says why.
    case refused(ClaimRefusal)
    /// An upload's offline records were judged and stored.
    case offlineStored(OfflineUploadResult)
}

/// Why a claim was refused inside the write transaction.
package enum ClaimRefusal: String, Sendable, Equatable {
    /// The key's status (now) does not allow it: revoked, or pending for a login.
    case keyRevoked = "key_revoked"
    case keyPending = "key_pending"
    /// The key is gone or no longer registered to that user and host.
    case keyChanged = "key_changed"
    /// The jti was used before.
    case replayed = "replayed"

    /// The refusal for a key found in `status` that is not among the allowed ones.
    package static func status(_ status: KeyStatus) -> ClaimRefusal {
        switch status {
        case .revoked: return .keyRevoked
        case .pending: return .keyPending
        case .active: return .keyChanged
        }
    }
}

/// The one replay window of a fleet: a `jti` is kept until its token's `exp` plus the
/// largest clock skew any instance may be configured with, so that no instance — whatever
/// its `--skew` or `--max-ttl` — accepts a token after another forgot its jti.
package enum ReplayWindow {
    /// The largest `--skew` fingerauthd accepts, seconds.
    package static let maxSkew: Int64 = 300

    /// Until when the jti of a token expiring at `exp` is kept.
    package static func keepUntil(exp: Int64) -> Int64 {
        let (sum, overflow) = exp.addingReportingOverflow(maxSkew)
        return overflow ? Int64.max : sum
    }
}

import FingerAuthCore

/// A registered device key's state.
package enum KeyStatus: String, Sendable, CaseIterable {
    /// Tokens signed by it are accepted.
    case active
    /// Registered while `approval = manual`; refused until `fingerauthd keys approve`.
    case pending
    /// Refused for good; the kid can never be registered again.
    case revoked
}

/// A public key as the registry holds it.
package struct RegisteredKey: Sendable, Equatable {
    /// RFC 7638 thumbprint of `jwk`.
    package var kid: String
    package var user: String
    package var host: String
    package var jwk: JWK
    package var status: KeyStatus
    /// Registration time, seconds since the epoch.
    package var created: Int64
    /// Where the private key lives, as far as the authenticator was shown.
    package var kind: KeyOrigin
    /// For an attested key: the EK of the TPM that attested it (`EndorsementKeyID`); nil for
    /// a software key, and for keys attested before the authenticator recorded it.
    package var ek: String?

    package init(
        kid: String, user: String, host: String, jwk: JWK, status: KeyStatus, created: Int64,
        kind: KeyOrigin = .software, ek: String? = nil
    ) {
        self.kind = kind
        self.ek = ek
        self.kid = kid
        self.user = user
        self.host = host
        self.jwk = jwk
        self.status = status
        self.created = created
    }
}

/// Where a registered key's private half lives, as far as the authenticator was shown.
package enum KeyOrigin: String, Sendable, Equatable {
    /// A key the host holds in a file (or anywhere it likes): nothing was proven.
    case software
    /// A key whose registration proved, by TPM key attestation against a trusted EK CA,
    /// that it was made inside a TPM and cannot leave it.
    case attestedTPM = "attested-tpm"

    /// The kind a policy rule's `key` matches.
    package var policyKind: KeyKind { self == .attestedTPM ? .hardware : .software }
}

/// Finds registered keys by kid. The stores are the real ones; tests use a dictionary.
package protocol KeyDirectory: Sendable {
    /// The key registered under `kid`, in any status, or nil.
    func registeredKey(kid: String) throws(StoreError) -> RegisteredKey?
}

/// One row of the audit table: who tried what, from where, and what the answer was.
/// Values from requests are cleaned (printable ASCII, capped) before they get here; no
/// token, JWT or key is ever one of them.
package struct AuditEvent: Sendable, Equatable {
    /// What happened: a login, a registration, an admin's action, refused requests of one
    /// address counted together (`refusals`), …
    package var event: AuditEventKind
    /// The user the request proved to act for (a verified signature's key, a host token's
    /// key, an admin's choice); nil when nothing was proved.
    package var user: String?
    /// The user an unverified request only named (a token's `sub` before its signature
    /// verified). Proof of nothing: kept apart from `user` so that nobody reads a forged
    /// attempt as the user's own.
    package var claimedUser: String?
    package var host: String?
    package var kid: String?
    package var jti: String?
    /// How it ended.
    package var outcome: AuditOutcome
    /// Why it was refused, or what an accepted action did; nil for a plain accept.
    package var reason: AuditReason?
    /// The client's address, or `local` for admin commands.
    package var peer: String?
    /// Whether the request proved who sent it (a verified signature, a valid host token, an
    /// admin on this machine). Unverified rows have a retention of their own.
    package var verified: Bool
    /// How many requests the row stands for: more than one only for `refusals` rows.
    package var count: Int64
    /// The policy rule that decided a refusal (`policy_denied`) or that a change touched.
    package var rule: Int64?
    /// The console admin who took this action; nil for everything else.
    package var admin: String?
    /// A verified login token's `service` claim: the PAM service of a host's own login, or
    /// `fingerauth-agent` for every login the agent made.
    package var service: String?
    /// A verified login token's `client_service` claim: the service an agent's client named.
    /// Nobody vouches for it (the client chooses it); kept for the record only.
    package var clientService: String?
    /// A verified login's times as its helper reported them (`LoginStageReport`: nobody
    /// vouches for them); nil for every other row.
    package var stages: LoginStageReport?
    /// An offline record's own time as its host claims it (`at`): nobody vouches for it.
    /// The row's time is the authenticator's receipt. Nil for every other row.
    package var claimedTime: Int64?
    /// The remote approval the row is about (`approval_*` rows, and the login row of an
    /// approved remote login); nil for every other row.
    package var approval: String?
    /// The address of the client a remote login came from, as the asking host's `PAM_RHOST`
    /// says it (approval rows only): the host's word, which the person saw.
    package var clientAddress: String?
    /// The workstation (a device key's host) that showed or decided an approval.
    package var workstation: String?

    package init(
        event: AuditEventKind, user: String? = nil, claimedUser: String? = nil, host: String? = nil,
        kid: String? = nil, jti: String? = nil, outcome: AuditOutcome, reason: AuditReason? = nil,
        peer: String? = nil, verified: Bool = true, count: Int64 = 1, rule: Int64? = nil, admin: String? = nil
    ) {
        self.event = event
        self.user = user
        self.claimedUser = claimedUser
        self.host = host
        self.kid = kid
        self.jti = jti
        self.outcome = outcome
        self.reason = reason
        self.peer = peer
        self.verified = verified
        self.count = count
        self.rule = rule
        self.admin = admin
    }
}

/// An audit row as `fingerauthd audit` prints it: the event and its time.
package struct AuditRecord: Sendable, Equatable {
    package var id: Int64
    /// Seconds since the epoch.
    package var time: Int64
    package var event: AuditEvent

    package init(id: Int64, time: Int64, event: AuditEvent) {
        self.id = id
        self.time = time
        self.event = event
    }
}

/// Which audit rows `auditRecords` returns.
package struct AuditFilter: Sendable, Equatable {
    /// Rows of this (verified) user only; nil for every row.
    package var user: String?
    /// Rows at or after this time (seconds since the epoch).
    package var since: Int64?
    /// At most this many rows: the last ones.
    package var limit: Int

    package init(user: String? = nil, since: Int64? = nil, limit: Int = 100) {
        self.user = user
        self.since = since
        self.limit = limit
    }
}

/// A host enrollment token as `fingerauthd token list` shows it: never the token, only
/// a short id (the first 16 hex digits of its SHA-256) that `token revoke --id` takes.
package struct HostTokenRecord: Sendable, Equatable {
    package var id: String
    package var host: String
    package var created: Int64
    /// nil while the token is usable.
    package var revoked: Int64?

    package init(id: String, host: String, created: Int64, revoked: Int64?) {
        self.id = id
        self.host = host
        self.created = created
        self.revoked = revoked
    }
}

/// What registering a key did.
package enum RegistrationResult: Sendable, Equatable {
    /// A new key, now active or pending.
    case created
    /// The same key for the same user and host was already active or pending.
    case alreadyRegistered
    /// The kid belongs to another user or host.
    case conflict
    /// The key was revoked; only an admin could bring it back.
    case revoked
    /// The registration proof's `jti` was seen before: nothing registered.
    case proofReplayed
    /// The user already has the most keys allowed on this host (`max-keys-per-user-host`),
    /// revoked ones not counted.
    case tooManyKeys
    /// The key was attested by another EK than the one pinned for its host.
    case ekMismatch
}

/// What revoking one key did.
package enum RevocationResult: Sendable, Equatable {
    case revoked
    case alreadyRevoked
    case unknown
}

/// What approving a pending key did.
package enum ApprovalResult: Sendable, Equatable {
    case approved
    case alreadyActive
    case revoked
    case unknown
}

/// What `token revoke` did: the hosts whose tokens were revoked, and with `--host` the
/// keys of that host revoked with them and its access tokens withdrawn.
package struct HostRevocation: Sendable, Equatable {
    package var hosts: [String]
    package var keys: [RegisteredKey]
    package var accessTokens: Int
    /// The host's host keys revoked with it (`revokeHostTokens` with a host).
    package var hostKeys: [RegisteredHostKey] = []

    package init(hosts: [String] = [], keys: [RegisteredKey] = [], accessTokens: Int = 0) {
        self.hosts = hosts
        self.keys = keys
        self.accessTokens = accessTokens
    }
}

/// An access token as introspection describes it (RFC 7662): active only while
/// unexpired and while the key it was issued for is active.
package struct AccessTokenState: Sendable, Equatable {
    package var user: String
    package var host: String
    package var kid: String
    package var created: Int64
    package var expires: Int64
    /// The status of the key the token was issued for, now.
    package var keyStatus: KeyStatus?

    package init(user: String, host: String, kid: String, created: Int64, expires: Int64, keyStatus: KeyStatus?) {
        self.user = user
        self.host = host
        self.kid = kid
        self.created = created
        self.expires = expires
        self.keyStatus = keyStatus
    }
}

/// Whether the store can answer right now (`ServiceOperation.health`).
package enum StoreHealth: Sendable, Equatable {
    case available
    /// The database cannot be reached; the text names no secret.
    case unavailable(String)
}

/// What one pruning pass removed.
package struct PruneResult: Sendable, Equatable {
    package var replay: Int
    package var accessTokens: Int
    /// Audit rows of verified requests past their retention.
    package var audit: Int
    /// Audit rows of unverified requests past their (shorter) retention.
    package var unverifiedAudit: Int
    /// Expired shared rate-limit windows (PostgreSQL only).
    package var rateCounters: Int

    /// Offline grants that ended (expired, replaced or withdrawn): a host asking about one
    /// hears "withdrawn" all the same.
    package var grants: Int

    package init(
        replay: Int = 0, accessTokens: Int = 0, audit: Int = 0, unverifiedAudit: Int = 0, rateCounters: Int = 0,
        grants: Int = 0
    ) {
        self.replay = replay
        self.accessTokens = accessTokens
        self.audit = audit
        self.unverifiedAudit = unverifiedAudit
        self.rateCounters = rateCounters
        self.grants = grants
    }

    package var total: Int { replay + accessTokens + audit + unverifiedAudit + rateCounters + grants }
}

/// What a pruning pass removes, in the database's own time.
package struct PrunePolicy: Sendable, Equatable {
    /// Audit rows of verified requests older than this many seconds go; nil keeps them.
    package var auditRetention: Int64?
    /// Audit rows of unverified requests older than this many seconds go; nil keeps them.
    package var unverifiedAuditRetention: Int64?

    package init(auditRetention: Int64? = nil, unverifiedAuditRetention: Int64? = nil) {
        self.auditRetention = auditRetention
        self.unverifiedAuditRetention = unverifiedAuditRetention
    }
}

/// A rate-limit key's current window: failures counted and the second it ends.
package struct FailureWindow: Sendable, Equatable {
    package var count: Int
    package var end: Int64

    package init(count: Int, end: Int64) {
        self.count = count
        self.end = end
    }
}

import FingerAuthCore

/// The registry as the service, the console and the admin commands reach it: narrow ports,
/// each a handful of methods, that `SQLiteStore` (one file, the embedded default) and
/// `PostgresStore` (one database shared by several fingerauthd instances) both implement
/// (FingerAuthStore). Every method either completes or throws `StoreError`; callers turn a
/// throw into `unavailable`, never into an accept.
///
/// The request path writes through a `Committer` only (group commit over `BatchStore`):
/// one transaction and one durable commit for a batch of items from many requests. The
/// admin commands and the rarer requests (registration, host-token revocation) write with
/// the methods below, each one transaction of its own.

/// Registered device keys: what the verifier looks up, registration, revocation, approval.
package protocol KeyRegistry: KeyDirectory {
    /// Every registered key, oldest first.
    func listKeys() throws(StoreError) -> [RegisteredKey]
    /// One page of keys as the console lists them: pending first, then newest first.
    func keysPage(_ page: Paging) throws(StoreError) -> [RegisteredKey]
    /// Registers `key` in one transaction: an identical key again writes nothing; otherwise
    /// the proof's `proofJTI` is used up, at most `keyLimit` active or pending keys per user
    /// and host are held (0: no limit), an attested key's EK must be its host's pin (pinned
    /// on first use), and the audit row is written with the outcome (`Registration.audit`).
    func register(
        _ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, keyLimit: Int,
        now: Int64
    ) throws(StoreError) -> RegistrationResult
    /// Marks an active or pending key revoked (it stays, so the kid can never be registered again).
    func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult
    /// Revokes every active or pending key of `user` and/or `host` (at least one given);
    /// returns the keys revoked.
    func revokeKeys(user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey]
    /// Turns a pending key active (`approval = manual`); a revoked key stays revoked.
    func approve(kid: String) throws(StoreError) -> ApprovalResult
    /// How many keys are in each status (for /metrics); every status is present.
    func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)]
    /// The hosts where `user` has an active key (their workstations), by name, at most `limit`.
    func activeKeyHosts(user: String, limit: Int) throws(StoreError) -> [String]
}

extension KeyRegistry {
    /// Registers `key` without a limit on the keys per user and host.
    package func register(
        _ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent,
        now: Int64
    ) throws(StoreError) -> RegistrationResult {
        try register(key, proofJTI: proofJTI, keepUntil: keepUntil, audit: audit, keyLimit: 0, now: now)
    }
}

/// Host enrollment tokens and OAuth access tokens, both kept as SHA-256 only.
package protocol HostTokens: Sendable {
    /// Stores the hash of a new token for `host` and returns the token (shown once).
    func createHostToken(host: String, now: Int64) throws(StoreError) -> String
    /// The host a presented token enrolls for, or nil (unknown, revoked or malformed).
    func host(forToken token: String) throws(StoreError) -> String?
    /// Every host token, oldest first, by id.
    func listHostTokens() throws(StoreError) -> [HostTokenRecord]
    /// Revokes the token with `id`, or every token of `host`; with `host`, also that host's
    /// keys and its access tokens, in the same transaction.
    func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> HostRevocation
    /// The access token whose SHA-256 (hex) is `sha256`, with its key's status now.
    func accessToken(sha256: String) throws(StoreError) -> AccessTokenState?
}

/// The audit log, outside the request path's batches.
package protocol AuditLog: Sendable {
    /// Appends one audit row at `now` (admin commands, the console).
    func audit(_ event: AuditEvent, now: Int64) throws(StoreError)
    /// Rows of `filter.user` (any user when nil) at or after `filter.since`, the last
    /// `filter.limit` of them, oldest first.
    func auditRecords(_ filter: AuditFilter) throws(StoreError) -> [AuditRecord]
}

extension AuditLog {
    /// The last `limit` audit rows, oldest first (for tests and tooling).
    package func auditEvents(limit: Int = 100) throws(StoreError) -> [AuditEvent] {
        try auditRecords(AuditFilter(limit: limit)).map(\.event)
    }
}

/// The central policy, the hosts it names (labels, EK pins) and its user lists.
package protocol PolicyStore: Sendable {
    /// Every rule with the labels of `host` and the lists of `user`, read in one statement
    /// (one snapshot: a change that committed is seen whole, or not at all).
    func policySnapshot(user: String, host: String) throws(StoreError) -> PolicySnapshot
    /// Every rule, in the order of evaluation.
    func policyRules() throws(StoreError) -> [PolicyRule]
    /// Applies `change` and, when it changed something, writes `audit` with what the policy
    /// said before and after, in one transaction (changes are serialised across instances).
    func changePolicy(_ change: PolicyChange, audit: AuditEvent, now: Int64) throws(StoreError) -> PolicyChangeResult
    /// Hosts with an enrollment token, a label, a key or an EK pin, with their labels,
    /// counts and pins, by name; with `page`, one page of them.
    func hostSummaries(page: Paging?) throws(StoreError) -> [HostSummary]
    /// Every user list and its members.
    func userLists() throws(StoreError) -> [(list: String, users: [String])]
    /// The TPM endorsement key pinned for `host`, if any.
    func ekPin(host: String) throws(StoreError) -> EKPin?
    /// An admin's change to a host's pin, with its audit rows (`EKPinResult.auditEvents`),
    /// in one transaction.
    func changeEKPin(_ change: EKPinChange, admin: String, peer: String, now: Int64) throws(StoreError) -> EKPinResult
}

extension PolicyStore {
    /// Every host (`hostSummaries(page: nil)`).
    package func hostSummaries() throws(StoreError) -> [HostSummary] { try hostSummaries(page: nil) }
}

/// TPM credential-activation challenges, in the database so that the answer may reach any
/// instance of a fleet.
package protocol ChallengeStore: Sendable {
    /// Stores a challenge unless its host holds `perHost` open ones or the table `capacity`
    /// (expired ones are dropped first).
    func addChallenge(_ challenge: StoredChallenge, perHost: Int, capacity: Int, now: Int64) throws(StoreError)
        -> ChallengeAdmission
    /// Removes the challenge `id` and returns it unless it expired: each is used once.
    func takeChallenge(id: String, now: Int64) throws(StoreError) -> StoredChallenge?
}

/// What the admin console's pages read (and `fingerauthd doctor`).
package protocol ConsoleQueries: Sendable {
    /// Audit rows for the console, newest first.
    func consoleAudit(_ query: ConsoleAuditQuery) throws(StoreError) -> [AuditRecord]
    /// Each of `keys`' last accepted login, by kid: one index seek per key.
    func lastLogins(of keys: [RegisteredKey]) throws(StoreError) -> [String: Int64]
    /// The last accepted login by any key of each of `hosts`, by host.
    func lastLogins(hosts: [String]) throws(StoreError) -> [String: Int64]
    /// The stage times reported with the last `limit` accepted logins since `since` by any
    /// key of each of `hosts`, newest first, by host (hosts without any are absent).
    func loginStages(hosts: [String], since: Int64, limit: Int) throws(StoreError) -> [String: [LoginStageReport]]
    /// Logins per hour (`login` rows, their counts) since `since`: (hour start, accepted, refused).
    func loginsPerHour(since: Int64) throws(StoreError) -> [(hour: Int64, accepted: Int64, refused: Int64)]
    /// The refusal reasons of the rows since `since`, most frequent first.
    func topRefusals(since: Int64, limit: Int) throws(StoreError) -> [(reason: String, count: Int64)]
    /// Every user the audit log names as proved (its `user` column), with its number of
    /// rows, by name (`fingerauthd doctor`).
    func auditUsers() throws(StoreError) -> [(user: String, rows: Int64)]
}

/// The admin console's accounts: made on the command line with a one-time setup secret
/// (only its SHA-256 is stored); only the password's memory-hard hash is kept.
package protocol AdminAccounts: Sendable {
    /// Creates admin `name` with a one-time setup secret (its SHA-256) valid until `expires`;
    /// false when the name exists.
    func createAdmin(name: String, setupDigest: [UInt8], expires: Int64, now: Int64) throws(StoreError) -> Bool
    /// Consumes the setup secret whose SHA-256 is `setupDigest` (unexpired) and sets the
    /// admin's password hash; the admin's name, or nil when no such setup is open.
    func completeAdminSetup(setupDigest: [UInt8], passwordHash: String, now: Int64) throws(StoreError) -> String?
    /// Where the setup secret with the SHA-256 `setupDigest` stands: open (and whose),
    /// used, expired, or unknown (never made, or replaced by `admin reset`). A read: the
    /// console looks before it shows the form and before it hashes.
    func adminSetupState(setupDigest: [UInt8], now: Int64) throws(StoreError) -> AdminSetupState
    /// Clears admin `name`'s password and gives it a new setup secret (its SHA-256) valid
    /// until `expires`, replacing any older one; false when there is no such admin.
    func resetAdmin(name: String, setupDigest: [UInt8], expires: Int64) throws(StoreError) -> Bool
    /// Deletes admin `name`; false when there is no such admin.
    func removeAdmin(name: String) throws(StoreError) -> Bool
    /// The password hash of admin `name`; nil when there is no such admin or it has not set one.
    func adminPasswordHash(name: String) throws(StoreError) -> String?
    /// Admin names, with whether each has finished its setup.
    func listAdmins() throws(StoreError) -> [(name: String, ready: Bool)]
}

/// Where a setup link stands, as its secret's SHA-256 finds it.
package enum AdminSetupState: Sendable, Equatable {
    /// Unused and unexpired: it sets the password of this admin.
    case open(admin: String)
    /// Its password was set already.
    case used
    /// Not used within its lifetime.
    case expired
    /// No account has it: mistyped, made up, or replaced by a newer link (`admin reset`).
    case unknown
}

/// Where the rate limits' failure counts live when every instance of a fleet shares them.
package protocol FailureCounts: Sendable {
    /// Whether the failure counts of the rate limits live in this store, shared by every
    /// instance on it (PostgreSQL), rather than in each process's memory (SQLite).
    var sharesFailureCounts: Bool { get }
    /// The open failure window of `key` at `now`, or nil when it has none.
    func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow?
    /// A login's reads in one statement (`LoginReads`): the policy facts of `user` and
    /// `host`, and the open windows of the shared `failureKeys` at `now`.
    func loginReads(user: String, host: String, failureKeys: [String], now: Int64) throws(StoreError) -> LoginReads
    /// Counts one attempt against the shared `key` (in its open window, or a new one of
    /// `window` seconds) and returns the count with it, in one statement: two instances
    /// never both see the same count. Stores that share no counts throw.
    func countAttempt(key: String, now: Int64, window: Int64) throws(StoreError) -> Int
    /// Takes back one attempt of the shared `key`'s open window (it succeeded).
    func takeBackAttempt(key: String, now: Int64) throws(StoreError)
}

/// The request path's one write: a batch of items in one transaction, durable on return.
package protocol BatchStore: Sendable {
    /// Runs `items` in one transaction and returns once it is durable (or throws, and then
    /// nothing of it was committed). One outcome per item, in order.
    func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome]
}

/// The store as a whole: its connections, its clock and its upkeep.
package protocol StoreUpkeep: Sendable {
    /// Closes every connection; later calls throw.
    func close()
    /// Whether the database answers now.
    func health() -> StoreHealth
    /// How commits are made durable, for the startup log line (e.g. `sqlite WAL
    /// synchronous=FULL`), read back from the database, not assumed.
    func durability() throws(StoreError) -> String
    /// The database's clock, seconds since the epoch: pruning and (on PostgreSQL) token
    /// times use it, so that instances whose clocks differ share one replay window.
    func databaseTime() throws(StoreError) -> Int64
    /// Removes replay rows past their `keep_until`, expired access tokens and audit rows
    /// past their retention, all by the database's clock, in small batches so that logins
    /// are never kept waiting behind it.
    func prune(_ policy: PrunePolicy) throws(StoreError) -> PruneResult
}

/// Every port at once: what a store implements and what the admin commands open.
package typealias AuthStorage = KeyRegistry & HostTokens & AuditLog & PolicyStore & ChallengeStore & ConsoleQueries
    & AdminAccounts & FailureCounts & BatchStore & StoreUpkeep & OfflineGrantStore
    & HostKeyRegistry & ApprovalStore

/// Registered host keys: what signs a host's approval requests.
package protocol HostKeyRegistry: Sendable {
    /// The host key `kid`, whatever its status; nil when unknown.
    func hostKey(kid: String) throws(StoreError) -> RegisteredHostKey?
    /// Registers `key` (same key again: nothing written, `.alreadyRegistered`), revoking the
    /// host's other active host key, using up the proof's jti, writing `audit`.
    func registerHostKey(
        _ key: RegisteredHostKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, now: Int64
    ) throws(StoreError) -> HostKeyRegistration
    /// Revokes host key `kid`, or every active host key of `host`; the keys revoked.
    func revokeHostKeys(kid: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredHostKey]
    /// Every host key, newest first (optionally of one host).
    func listHostKeys(host: String?) throws(StoreError) -> [RegisteredHostKey]
}

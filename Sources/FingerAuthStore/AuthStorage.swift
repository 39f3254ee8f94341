/// The registry as the service and the admin commands use it: keys, host enrollment
/// tokens, OAuth access tokens, the replay table and the audit log. Two implementations:
/// `SQLiteStore` (one file, the embedded default) and `PostgresStore` (one database shared
/// by several fingerauthd instances). Every method either completes or throws
/// `StoreError`; callers turn a throw into 503, never into an accept.
///
/// The request path writes through `commit(_:)` only — one transaction and one durable
/// commit for a batch of items from many requests (`GroupCommit` gathers them). The admin
/// commands and the rarer requests (registration, host-token revocation) write with the
/// methods below, each one transaction of its own.
public protocol AuthStorage: KeyDirectory, AnyObject {
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

    // MARK: The request path

    /// Runs `items` in one transaction and returns once it is durable (or throws, and then
    /// nothing of it was committed). One outcome per item, in order.
    func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome]

    // MARK: Keys

    func listKeys() throws(StoreError) -> [RegisteredKey]
    /// One page of keys as the console lists them: pending first, then newest first.
    func keysPage(_ page: Paging) throws(StoreError) -> [RegisteredKey]
    /// Registers `key` in one transaction as `Registration` describes: an identical key
    /// again writes nothing; otherwise the proof's `proofJTI` is used up, at most `keyLimit`
    /// active or pending keys per user and host are held (0: no limit), an attested key's
    /// EK must be its host's pin (pinned on first use), and the audit row is written with
    /// the outcome (`audit.outcome`/`reason` set here).
    func register(_ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, keyLimit: Int,
                  now: Int64) throws(StoreError) -> RegistrationResult
    func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult
    /// Revokes every active or pending key of `user` and/or `host` (at least one given);
    /// returns the keys revoked.
    func revokeKeys(user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey]
    func approve(kid: String) throws(StoreError) -> ApprovalResult
    func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)]

    // MARK: Tokens

    func createHostToken(host: String, now: Int64) throws(StoreError) -> String
    func host(forToken token: String) throws(StoreError) -> String?
    func listHostTokens() throws(StoreError) -> [HostTokenRecord]
    /// Revokes the token with `id`, or every token of `host`; with `host`, also that host's
    /// keys and its access tokens, in the same transaction.
    func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> HostRevocation
    /// The access token whose SHA-256 (hex) is `sha256`, with its key's status now.
    func accessToken(sha256: String) throws(StoreError) -> AccessTokenState?

    // MARK: Audit

    /// Appends one audit row at `now` (admin commands; the request path uses `commit`).
    func audit(_ event: AuditEvent, now: Int64) throws(StoreError)
    func auditRecords(_ filter: AuditFilter) throws(StoreError) -> [AuditRecord]

    /// Removes replay rows past their `keep_until`, expired access tokens and audit rows
    /// past their retention, all by the database's clock, in small batches so that logins
    /// are never kept waiting behind it.
    func prune(_ policy: PrunePolicy) throws(StoreError) -> PruneResult

    // MARK: Policy

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
    /// Stores a TPM credential-activation challenge unless its host holds `perHost` open
    /// ones or the table `capacity` (expired ones are dropped first).
    func addChallenge(_ challenge: StoredChallenge, perHost: Int, capacity: Int, now: Int64) throws(StoreError) -> ChallengeAdmission
    /// Removes the challenge `id` and returns it unless it expired: each is used once.
    func takeChallenge(id: String, now: Int64) throws(StoreError) -> StoredChallenge?

    // MARK: EK pins

    /// The TPM endorsement key pinned for `host`, if any.
    func ekPin(host: String) throws(StoreError) -> EKPin?
    /// An admin's change to a host's pin, with its audit rows (`ek_pin` with `by ADMIN:
    /// before -> after`, `admin_revoke` for each key it revoked), in one transaction.
    func changeEKPin(_ change: EKPinChange, admin: String, peer: String, now: Int64) throws(StoreError) -> EKPinResult

    // MARK: The admin console

    /// Creates admin `name` with a one-time setup secret (its SHA-256) valid until `expires`;
    /// false when the name exists.
    func createAdmin(name: String, setupDigest: [UInt8], expires: Int64, now: Int64) throws(StoreError) -> Bool
    /// Consumes the setup secret whose SHA-256 is `setupDigest` (unexpired) and sets the
    /// admin's password hash; the admin's name, or nil when no such setup is open.
    func completeAdminSetup(setupDigest: [UInt8], passwordHash: String, now: Int64) throws(StoreError) -> String?
    /// The admin whose setup secret has the SHA-256 `setupDigest` and is still open
    /// (unexpired, unused); nil otherwise. A read: the console looks before it hashes.
    func openAdminSetup(setupDigest: [UInt8], now: Int64) throws(StoreError) -> String?
    /// The password hash of admin `name`; nil when there is no such admin or it has not set one.
    func adminPasswordHash(name: String) throws(StoreError) -> String?
    /// Admin names, with whether each has finished its setup.
    func listAdmins() throws(StoreError) -> [(name: String, ready: Bool)]
    /// Audit rows for the console, newest first.
    func consoleAudit(_ query: ConsoleAuditQuery) throws(StoreError) -> [AuditRecord]
    /// Each of `keys`' last accepted login, by kid: one index seek per key.
    func lastLogins(of keys: [RegisteredKey]) throws(StoreError) -> [String: Int64]
    /// The last accepted login by any key of each of `hosts`, by host.
    func lastLogins(hosts: [String]) throws(StoreError) -> [String: Int64]
    /// Logins per hour (`login` rows, their counts) since `since`: (hour start, accepted, refused).
    func loginsPerHour(since: Int64) throws(StoreError) -> [(hour: Int64, accepted: Int64, refused: Int64)]
    /// The refusal reasons of the rows since `since`, most frequent first.
    func topRefusals(since: Int64, limit: Int) throws(StoreError) -> [(reason: String, count: Int64)]
    /// Every user the audit log names as proved (its `user` column), with its number of
    /// rows, by name (`fingerauthd doctor`).
    func auditUsers() throws(StoreError) -> [(user: String, rows: Int64)]

    // MARK: Rate limits

    /// Whether the failure counts of the rate limits live in this store, shared by every
    /// instance on it (PostgreSQL), rather than in each process's memory (SQLite).
    var sharesFailureCounts: Bool { get }
    /// The open failure window of `key` at `now`, or nil when it has none.
    func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow?
}

extension AuthStorage {
    /// Every host (`hostSummaries(page: nil)`).
    public func hostSummaries() throws(StoreError) -> [HostSummary] { try hostSummaries(page: nil) }

    /// Registers `key` without a limit on the keys per user and host.
    public func register(_ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent,
                         now: Int64) throws(StoreError) -> RegistrationResult {
        try register(key, proofJTI: proofJTI, keepUntil: keepUntil, audit: audit, keyLimit: 0, now: now)
    }

    /// The last `limit` audit rows, oldest first (for tests and tooling).
    public func auditEvents(limit: Int = 100) throws(StoreError) -> [AuditEvent] {
        try auditRecords(AuditFilter(limit: limit)).map(\.event)
    }
}

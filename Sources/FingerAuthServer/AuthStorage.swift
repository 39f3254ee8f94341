/// Whether the store can answer right now (for `GET /healthz`).
public enum StoreHealth: Sendable, Equatable {
    case available
    /// The database cannot be reached; the text names no secret.
    case unavailable(String)
}

/// What one pruning pass removed.
public struct PruneResult: Sendable, Equatable {
    public var replay: Int
    public var accessTokens: Int
    public var audit: Int
    /// Expired shared rate-limit windows (PostgreSQL only).
    public var rateCounters: Int

    public init(replay: Int = 0, accessTokens: Int = 0, audit: Int = 0, rateCounters: Int = 0) {
        self.replay = replay
        self.accessTokens = accessTokens
        self.audit = audit
        self.rateCounters = rateCounters
    }
}

/// The registry as the service and the admin commands use it: keys, host enrollment
/// tokens, OAuth access tokens, the replay table and the audit log. Two implementations:
/// `AuthStore` (one SQLite file, the embedded default) and `PostgresStore` (one
/// PostgreSQL database shared by several fingerauthd instances). Every method either
/// completes or throws `StoreError`; callers turn a throw into 503, never into an accept.
public protocol AuthStorage: KeyDirectory, ReplayGuard, AnyObject {
    /// Closes every connection; later calls throw.
    func close()
    /// Whether the database answers now.
    func health() -> StoreHealth

    // Keys
    func listKeys() throws(StoreError) -> [RegisteredKey]
    func register(_ key: RegisteredKey) throws(StoreError) -> RegistrationResult
    func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult
    func approve(kid: String) throws(StoreError) -> ApprovalResult
    func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)]

    // Tokens
    func createHostToken(host: String, now: Int64) throws(StoreError) -> String
    func host(forToken token: String) throws(StoreError) -> String?
    func listHostTokens() throws(StoreError) -> [HostTokenRecord]
    func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> [String]
    func storeAccessToken(sha256: String, user: String, host: String, kid: String,
                          now: Int64, expires: Int64) throws(StoreError)

    // Audit
    func audit(_ event: AuditEvent, now: Int64) throws(StoreError)
    func auditRecords(user: String?, since: Int64?, limit: Int) throws(StoreError) -> [AuditRecord]

    /// Removes replay rows whose `exp` is before `replayBefore`, access tokens expired at
    /// `now`, and audit rows older than `auditBefore` (none when nil), in small batches so
    /// that logins are never kept waiting behind it.
    func prune(now: Int64, replayBefore: Int64, auditBefore: Int64?) throws(StoreError) -> PruneResult

    // Rate limits
    /// Whether the failure counts of the rate limits live in this store, shared by every
    /// instance on it (PostgreSQL), rather than in each process's memory (SQLite).
    var sharesFailureCounts: Bool { get }
    /// The open failure window of `key` at `now`, or nil when it has none.
    func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow?
    /// Counts one failure for `key` at `now`: in its open window, or in a new one of
    /// `window` seconds starting now. One atomic statement across instances.
    func recordFailure(key: String, now: Int64, window: Int64) throws(StoreError)
}

/// A rate-limit key's current window: failures counted and the second it ends.
public struct FailureWindow: Sendable, Equatable {
    public var count: Int
    public var end: Int64

    public init(count: Int, end: Int64) {
        self.count = count
        self.end = end
    }
}

extension AuthStorage {
    /// Stores count no failures unless they say so (the in-memory limiter does).
    public var sharesFailureCounts: Bool { false }
    public func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? { nil }
    public func recordFailure(key: String, now: Int64, window: Int64) throws(StoreError) {}
}

extension AuthStorage {
    /// The last `limit` audit rows, oldest first (for tests and tooling).
    public func auditEvents(limit: Int = 100) throws(StoreError) -> [AuditEvent] {
        try auditRecords(user: nil, since: nil, limit: limit).map(\.event)
    }
}

/// What approving a pending key did.
public enum ApprovalResult: Sendable, Equatable {
    case approved
    case alreadyActive
    case revoked
    case unknown
}

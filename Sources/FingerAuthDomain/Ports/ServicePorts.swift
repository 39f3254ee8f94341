import FingerAuthCore

/// What the authenticator's service reaches of the registry: keys, host and access tokens,
/// the policy, attestation challenges, shared failure counts and the store's health.
package typealias ServiceRegistry = KeyRegistry & HostTokens & PolicyStore & ChallengeStore & FailureCounts
    & StoreUpkeep
    & OfflineGrantStore & ApprovalStore & HostKeyRegistry

/// Where the authenticator reads the time: whole seconds since the Unix epoch, from any
/// thread. The daemon passes the database's clock, the admin commands the system's; tests
/// pass a fake.
package typealias AuthClock = Clock & Sendable

/// How the request path writes: group commit (`GroupCommit` in FingerAuthStore) over a
/// `BatchStore`, so that the writes of many requests share one transaction and one durable
/// commit.
package protocol Committer: Sendable {
    /// Starts the writer thread; false when it could not be created (then each write
    /// commits on its caller's thread).
    @discardableResult
    func start() -> Bool
    /// Commits what is queued, then stops the writer thread.
    func stop()
    /// Writes `items` in the next batch and returns their outcomes once that batch is
    /// durable; throws when it failed or did not commit in time.
    func write(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome]
    /// Writes `items` in the next batch and calls `completion` once that batch is durable
    /// or failed, on the writer's thread (which it must not keep).
    func submit(_ items: [WriteItem], completion: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void)
    /// Commits `items` on the caller's thread when nothing else is committing or queued;
    /// nil when the writer is busy (then the caller submits them).
    func commitAlone(_ items: [WriteItem]) -> Result<[WriteOutcome], StoreError>?
    /// Batches committed, items in them, and batches that failed, since start.
    var counts: (batches: Int64, items: Int64, failed: Int64) { get }
}

/// Where the service's free-form lines go (start, stop, errors). `RequestLog`
/// (FingerAuthTransport) writes them to standard error, beside each request's line.
package protocol ServiceLog: Sendable {
    /// Writes a free-form line. Callers never pass secrets.
    func message(_ text: String)
}

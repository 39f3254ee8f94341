import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

#if canImport(Glibc)
import Glibc
#endif

/// The store's upkeep on a thread of its own (pthread_create): every `interval` seconds it
/// removes jti rows past their window, expired access tokens, expired shared rate-limit
/// windows (PostgreSQL) and audit rows past their retention — all by the database's clock,
/// in the store's small batches, so logins go on meanwhile; and every few seconds it
/// measures the database's clock for `clock`. Every instance of a fleet may run one; on
/// PostgreSQL they skip each other's rows. `stop()` wakes and joins the thread.
///
/// `@unchecked Sendable`: the daemon's thread starts, stops and may measure; the pruning
/// thread prunes and measures. `stopping`, `thread` and `reportedOffset` change only under
/// `lock`; the store, clock and log are Sendable and set in `init`.
package final class StorePruner: @unchecked Sendable {
    let store: any StoreUpkeep
    let interval: Int64
    let policy: PrunePolicy
    let clock: DatabaseClock?
    let log: @Sendable (String) -> Void
    /// Seconds between two measurements of the database's clock.
    static let clockInterval: Int64 = 10
    /// A clock difference at least this large (seconds) is logged when it changes.
    static let clockWarning: Int64 = 2

    private let lock = Lock()
    private let wake = Condition()
    private var stopping = false
    private var thread: WorkerThread?
    private var reportedOffset: Int64 = 0

    package init(
        store: any StoreUpkeep, interval: Int64, policy: PrunePolicy, clock: DatabaseClock? = nil,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.store = store
        self.interval = max(1, interval)
        self.policy = policy
        self.clock = clock
        self.log = log
    }

    deinit { stop() }

    /// One pruning pass now; errors are logged (the store may be unreachable) and retried later.
    @discardableResult
    package func pruneOnce() -> PruneResult? {
        do throws(StoreError) {
            let result = try store.prune(policy)
            if result.total > 0 {
                log(
                    "pruned \(result.replay) jti, \(result.accessTokens) access tokens, \(result.audit) audit rows, "
                        + "\(result.unverifiedAudit) unverified audit rows"
                        + (result.rateCounters > 0 ? ", \(result.rateCounters) rate-limit windows" : "")
                        + (result.grants > 0 ? ", \(result.grants) ended offline grants" : ""))
            }
            return result
        } catch {
            log("prune failed: \(error)")
            return nil
        }
    }

    /// Measures the database's clock now; logs when the difference to this machine's
    /// clock becomes (or stops being) notable.
    package func measureClock() {
        guard let clock else { return }
        do throws(StoreError) {
            let offset = try clock.measure { () throws(StoreError) -> Int64 in try store.databaseTime() }
            let notable = abs(offset) >= Self.clockWarning
            // The offset to report, if it changed notably since the last report.
            let change = lock.withLock { () -> Int64? in
                if notable && abs(offset - reportedOffset) >= Self.clockWarning {
                    reportedOffset = offset
                    return offset
                }
                if !notable && reportedOffset != 0 {
                    reportedOffset = 0
                    return 0
                }
                return nil
            }
            if let change, change != 0 {
                log(
                    "this machine's clock is \(abs(change)) s \(change > 0 ? "behind" : "ahead of") the database's; "
                        + "token times are judged by the database's clock")
            } else if change == 0 {
                log("this machine's clock agrees with the database's again")
            }
        } catch {
            log("cannot read the database's clock: \(error)")
        }
    }

    /// Starts the thread; false when it could not be created (pruning then does not run).
    @discardableResult
    package func start() -> Bool {
        switch WorkerThread.start({ [self] in loop() }) {
        case let .success(started):
            lock.withLock { thread = started }
            return true
        case let .failure(error):
            log("cannot start the pruning thread: \(error)")
            return false
        }
    }

    /// Wakes the thread and waits for it to finish its batch and exit.
    package func stop() {
        let running = lock.withLock { () -> WorkerThread? in
            stopping = true
            wake.broadcast()
            defer { thread = nil }
            return thread
        }
        running?.join()
    }

    private func loop() {
        let step = clock == nil ? interval : min(interval, Self.clockInterval)
        var sincePrune: Int64 = 0
        while true {
            let deadline = Deadline.after(seconds: Double(step))
            let done = lock.withLock { () -> Bool in
                while !stopping && !deadline.hasPassed { wake.wait(lock, until: deadline) }
                return stopping
            }
            if done { return }
            measureClock()
            sincePrune += step
            if sincePrune >= interval {
                sincePrune = 0
                pruneOnce()
            }
        }
    }
}

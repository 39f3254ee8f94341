#if canImport(Glibc)
import Glibc
#endif

/// The store's upkeep on a thread of its own (pthread_create): every `interval` seconds it
/// removes jti rows past their window, expired access tokens, expired shared rate-limit
/// windows (PostgreSQL) and audit rows past their retention — all by the database's clock,
/// in the store's small batches, so logins go on meanwhile; and every few seconds it
/// measures the database's clock for `clock`. Every instance of a fleet may run one; on
/// PostgreSQL they skip each other's rows. `stop()` wakes and joins the thread.
public final class StorePruner: @unchecked Sendable {
    let store: any AuthStorage
    let interval: Int64
    let policy: PrunePolicy
    let clock: DatabaseClock?
    let log: @Sendable (String) -> Void
    /// Seconds between two measurements of the database's clock.
    static let clockInterval: Int64 = 10
    /// A clock difference at least this large (seconds) is logged when it changes.
    static let clockWarning: Int64 = 2

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>
    private var stopping = false
    private var thread: pthread_t?
    private var reportedOffset: Int64 = 0

    public init(store: any AuthStorage, interval: Int64, policy: PrunePolicy, clock: DatabaseClock? = nil,
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.store = store
        self.interval = max(1, interval)
        self.policy = policy
        self.clock = clock
        self.log = log
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        wake.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(wake, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        stop()
        pthread_cond_destroy(wake)
        wake.deinitialize(count: 1)
        wake.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// One pruning pass now; errors are logged (the store may be unreachable) and retried later.
    @discardableResult
    public func pruneOnce() -> PruneResult? {
        do throws(StoreError) {
            let result = try store.prune(policy)
            if result.total > 0 {
                log("pruned \(result.replay) jti, \(result.accessTokens) access tokens, \(result.audit) audit rows, "
                    + "\(result.unverifiedAudit) unverified audit rows"
                    + (result.rateCounters > 0 ? ", \(result.rateCounters) rate-limit windows" : ""))
            }
            return result
        } catch {
            log("prune failed: \(error)")
            return nil
        }
    }

    /// Measures the database's clock now; logs when the difference to this machine's
    /// clock becomes (or stops being) notable.
    public func measureClock() {
        guard let clock else { return }
        do throws(StoreError) {
            let offset = try clock.measure(store)
            let notable = abs(offset) >= Self.clockWarning
            if notable && abs(offset - reportedOffset) >= Self.clockWarning {
                log("this machine's clock is \(abs(offset)) s \(offset > 0 ? "behind" : "ahead of") the database's; "
                    + "token times are judged by the database's clock")
                reportedOffset = offset
            } else if !notable && reportedOffset != 0 {
                log("this machine's clock agrees with the database's again")
                reportedOffset = 0
            }
        } catch {
            log("cannot read the database's clock: \(error)")
        }
    }

    /// Starts the thread; false when it could not be created (pruning then does not run).
    @discardableResult
    public func start() -> Bool {
        var created = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&created, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<StorePruner>.fromOpaque(raw).takeRetainedValue().loop()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<StorePruner>.fromOpaque(context).release()
            log("cannot start the pruning thread: \(String(cString: strerror(rc)))")
            return false
        }
        thread = created
        return true
    }

    /// Wakes the thread and waits for it to finish its batch and exit.
    public func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(mutex)
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    private func loop() {
        let step = clock == nil ? interval : min(interval, Self.clockInterval)
        var sincePrune: Int64 = 0
        while true {
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            deadline.tv_sec += Int(step)
            pthread_mutex_lock(mutex)
            while !stopping {
                if pthread_cond_timedwait(wake, mutex, &deadline) == ETIMEDOUT { break }
            }
            let done = stopping
            pthread_mutex_unlock(mutex)
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

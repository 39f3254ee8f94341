#if canImport(Glibc)
import Glibc
#endif

/// Removes expired jti rows, expired access tokens, expired shared rate-limit windows
/// (PostgreSQL) and audit rows older than the retention, every `interval` seconds, on a thread of its own (pthread_create), in the
/// store's small batches: logins go on meanwhile. Every instance of a fleet may run one;
/// on PostgreSQL they skip each other's rows. `stop()` wakes and joins the thread.
public final class StorePruner: @unchecked Sendable {
    let store: any AuthStorage
    let interval: Int64
    /// Replay rows are kept this many seconds past `exp` (skew + longest lifetime).
    let replaySlack: Int64
    /// Audit rows older than this many seconds are removed; nil keeps them all.
    let auditRetention: Int64?
    let clock: any AuthClock
    let log: RequestLog

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>
    private var stopping = false
    private var thread: pthread_t?

    public init(store: any AuthStorage, interval: Int64, replaySlack: Int64, auditRetention: Int64?,
                clock: any AuthClock = WallClock(), log: RequestLog = RequestLog()) {
        self.store = store
        self.interval = max(1, interval)
        self.replaySlack = replaySlack
        self.auditRetention = auditRetention
        self.clock = clock
        self.log = log
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        wake.initialize(to: pthread_cond_t())
        pthread_cond_init(wake, nil)
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

    /// One pass now; errors are logged (the store may be unreachable) and retried later.
    @discardableResult
    public func pruneOnce() -> PruneResult? {
        let now = clock.now()
        do throws(StoreError) {
            let result = try store.prune(now: now, replayBefore: now - replaySlack,
                                         auditBefore: auditRetention.map { now - $0 })
            if result.replay + result.accessTokens + result.audit + result.rateCounters > 0 {
                log.message("pruned \(result.replay) jti, \(result.accessTokens) access tokens, \(result.audit) audit rows"
                            + (result.rateCounters > 0 ? ", \(result.rateCounters) rate-limit windows" : ""))
            }
            return result
        } catch {
            log.message("prune failed: \(error)")
            return nil
        }
    }

    /// Starts the thread; false when it could not be created (pruning then does not run).
    @discardableResult
    public func start() -> Bool {
        var created = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&created, nil, { raw in
            guard let raw else { return nil }
            let pruner = Unmanaged<StorePruner>.fromOpaque(raw).takeRetainedValue()
            pruner.loop()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<StorePruner>.fromOpaque(context).release()
            log.message("cannot start the pruning thread: \(String(cString: strerror(rc)))")
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
        while true {
            var deadline = timespec()
            clock_gettime(CLOCK_REALTIME, &deadline)
            deadline.tv_sec += Int(interval)
            pthread_mutex_lock(mutex)
            while !stopping {
                if pthread_cond_timedwait(wake, mutex, &deadline) == ETIMEDOUT { break }
            }
            let done = stopping
            pthread_mutex_unlock(mutex)
            if done { return }
            pruneOnce()
        }
    }
}

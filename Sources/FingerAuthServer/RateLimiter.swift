import FingerAuthCore

/// At most `failures` refused attempts per `window` seconds; `failures == 0` turns it off.
public struct RateLimit: Sendable, Equatable {
    public var failures: Int
    public var window: Int64

    public init(failures: Int, window: Int64) {
        self.failures = failures
        self.window = window
    }

    /// No limit.
    public static let off = RateLimit(failures: 0, window: 60)
}

/// Counts refused attempts per key (a user name or a peer address) in fixed windows that
/// start at the first failure. Once a key reached its limit, `retryAfter` says how many
/// seconds remain in its window; the service answers 429 with `Retry-After` meanwhile.
/// Memory is bounded: past `capacity` keys, expired windows are dropped, and when none
/// has expired new keys are not tracked (the limit fails open rather than growing).
public final class FailureLimiter: @unchecked Sendable {
    private struct Window {
        var start: Int64
        var count: Int
    }

    public let limit: RateLimit
    /// The store counting for every instance when it shares failure counts (PostgreSQL).
    let shared: (any AuthStorage)?
    /// Prefix of this limiter's keys in the shared store ("user:", "address:").
    let scope: String
    private let capacity: Int
    private let lock = Lock()
    private var windows: [String: Window] = [:]

    /// A limiter enforcing `limit` over at most `capacity` keys at once.
    public init(_ limit: RateLimit, capacity: Int = 100_000) {
        self.limit = limit
        self.capacity = capacity
        self.shared = nil
        self.scope = ""
    }

    /// A limiter enforcing `limit` with its counts in `store` when the store shares them
    /// between instances, in memory otherwise; `scope` keeps user and address keys apart.
    public init(_ limit: RateLimit, store: any AuthStorage, scope: String) {
        self.limit = limit
        self.capacity = 100_000
        self.shared = store.sharesFailureCounts ? store : nil
        self.scope = scope
    }

    /// `retryAfter`, from the shared store when there is one; a store failure throws
    /// (the caller answers 503: fail closed).
    public func checkedRetryAfter(_ key: String, now: Int64) throws(StoreError) -> Int64? {
        guard limit.failures > 0 else { return nil }
        guard let shared else { return retryAfter(key, now: now) }
        guard let window = try shared.failureWindow(key: scope + key, now: now), now < window.end else { return nil }
        return window.count >= limit.failures ? max(1, window.end - now) : nil
    }

    /// `recordFailure`, in the shared store when there is one; a store failure throws.
    public func checkedRecordFailure(_ key: String, now: Int64) throws(StoreError) {
        guard limit.failures > 0 else { return }
        guard let shared else { return recordFailure(key, now: now) }
        try shared.recordFailure(key: scope + key, now: now, window: limit.window)
    }

    /// Seconds until `key` may try again, or nil when it may try now.
    public func retryAfter(_ key: String, now: Int64) -> Int64? {
        guard limit.failures > 0 else { return nil }
        return lock.withLock { () -> Int64? in
            guard let window = windows[key] else { return nil }
            let end = window.start + limit.window
            guard now < end else {
                windows[key] = nil
                return nil
            }
            return window.count >= limit.failures ? max(1, end - now) : nil
        }
    }

    /// Counts one refused attempt for `key` at `now`.
    public func recordFailure(_ key: String, now: Int64) {
        guard limit.failures > 0 else { return }
        lock.withLock {
            if var window = windows[key], now < window.start + limit.window {
                window.count += 1
                windows[key] = window
                return
            }
            if windows.count >= capacity {
                let window = limit.window
                windows = windows.filter { now < $0.value.start + window }
                guard windows.count < capacity else { return }
            }
            windows[key] = Window(start: now, count: 1)
        }
    }
}

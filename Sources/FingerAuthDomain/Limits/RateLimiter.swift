import FingerAuthCore
import Synchronization

/// At most `failures` refused attempts per `window` seconds; `failures == 0` turns it off.
package struct RateLimit: Sendable, Equatable {
    package var failures: Int
    package var window: Int64

    package init(failures: Int, window: Int64) {
        self.failures = failures
        self.window = window
    }

    /// No limit.
    package static let off = RateLimit(failures: 0, window: 60)
}

/// Counts refused attempts per key (a client address, or a verified user at an address) in
/// fixed windows that start at the first failure. Once a key reached its limit, `retryAfter`
/// says how many seconds remain in its window; the service refuses (`tooMany(retryAfter:)`)
/// meanwhile. Only refusals count: a success neither resets nor extends a window.
///
/// The counts live in this process's memory, or — when the store shares them between the
/// instances of a fleet (PostgreSQL) — in the store, written through the request's own
/// batch (`failureItems`). Memory is bounded: past `capacity` keys, expired windows are
/// dropped, and when none has expired new keys are not tracked (the limit fails open
/// rather than growing). Keys are compared byte for byte.
package final class FailureLimiter: Sendable {
    private struct Window {
        var start: Int64
        var count: Int
    }

    package let limit: RateLimit
    /// The store counting for every instance when it shares failure counts (PostgreSQL).
    let shared: (any FailureCounts)?
    /// Prefix of this limiter's keys in the shared store ("user:", "address:").
    let scope: String
    private let capacity: Int
    private let windows = Mutex<[[UInt8]: Window]>([:])

    /// A limiter in memory enforcing `limit` over at most `capacity` keys at once.
    package init(_ limit: RateLimit, capacity: Int = 100_000) {
        self.limit = limit
        self.capacity = capacity
        self.shared = nil
        self.scope = ""
    }

    /// A limiter enforcing `limit` with its counts in `store` when the store shares them
    /// between instances, in memory otherwise; `scope` keeps user and address keys apart.
    package init(_ limit: RateLimit, store: any FailureCounts, scope: String) {
        self.limit = limit
        self.capacity = 100_000
        self.shared = store.sharesFailureCounts ? store : nil
        self.scope = scope
    }

    /// Seconds until `key` may try again, or nil when it may try now; a shared store that
    /// cannot be read throws (the caller ends in `unavailable`: fail closed).
    package func retryAfter(_ key: String, now: Int64) throws(StoreError) -> Int64? {
        guard limit.failures > 0 else { return nil }
        if let shared { return sharedRetryAfter(try shared.failureWindow(key: scope + key, now: now), now: now) }
        return windows.withLock { windows -> Int64? in
            let bytes = Array(key.utf8)
            guard let window = windows[bytes] else { return nil }
            let end = window.start + limit.window
            guard now < end else {
                windows[bytes] = nil
                return nil
            }
            return window.count >= limit.failures ? max(1, end - now) : nil
        }
    }

    /// `retryAfter` with the shared window already read when `reads` asked for it
    /// (`sharedKey`); otherwise read now, as a limiter in memory reads its own.
    package func retryAfter(_ key: String, now: Int64, reads: LoginReads?) throws(StoreError) -> Int64? {
        guard limit.failures > 0 else { return nil }
        guard shared != nil, let reads, reads.keys.contains(scope + key) else { return try retryAfter(key, now: now) }
        return sharedRetryAfter(reads.windows[scope + key], now: now)
    }

    /// The key of `key` in the shared store, nil when this limiter keeps its counts in memory
    /// or is off: what a login's reads fetch ahead.
    package func sharedKey(_ key: String) -> String? {
        shared != nil && limit.failures > 0 ? scope + key : nil
    }

    private func sharedRetryAfter(_ window: FailureWindow?, now: Int64) -> Int64? {
        guard let window, now < window.end else { return nil }
        // Never more than a window: an instance whose clock (the database's, measured to
        // the second) runs a second behind the one that opened the window would say 61.
        return window.count >= limit.failures ? min(limit.window, max(1, window.end - now)) : nil
    }

    /// Counts one refused attempt for `key` at `now`: in memory at once, or — for a shared
    /// store — as the write items the caller adds to its batch.
    package func failureItems(_ key: String, now: Int64) -> [WriteItem] {
        guard limit.failures > 0 else { return [] }
        if shared != nil { return [.failure(key: scope + key, now: now, window: limit.window)] }
        record(key, now: now)
        return []
    }

    /// Counts one refused attempt for `key` at `now` in memory.
    package func record(_ key: String, now: Int64) {
        guard limit.failures > 0 else { return }
        let bytes = Array(key.utf8)
        windows.withLock { windows in
            if var window = windows[bytes], now < window.start + limit.window {
                window.count += 1
                windows[bytes] = window
                return
            }
            if windows.count >= capacity {
                let length = limit.window
                windows = windows.filter { now < $0.value.start + length }
                guard windows.count < capacity else { return }
            }
            windows[bytes] = Window(start: now, count: 1)
        }
    }
}

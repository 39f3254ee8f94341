import Synchronization

/// What a parked long poll waits for.
package enum WaitKey: Hashable, Sendable {
    /// A host waiting for the decision on its approval `id`.
    case approval(String)
    /// A workstation watching `user`'s approvals.
    case user(String)
}

/// Long polls parked until what they wait for changes. The service reads a key's version
/// before it reads the state it answers with, and parks with that version
/// (`Step.await`); whoever changes an approval wakes its keys (`wake`). A change between the
/// read and the parking is seen by the version, so no wake-up is lost; a spurious one only
/// makes the poll read again. The transport wakes a poll itself at its deadline, and every
/// poll at its stop (`closeAll`).
package final class WaitRoom: Sendable {
    private struct State {
        var versions: [WaitKey: UInt64] = [:]
        var waiters: [WaitKey: [UInt64: @Sendable () -> Void]] = [:]
        var counter: UInt64 = 0
        /// The version of every key not remembered: the counter when versions were last forgotten.
        var floor: UInt64 = 0
        var count = 0
        var closed = false
    }

    private let state = Mutex(State())
    /// Keys whose version is remembered without a waiter; past it, those are forgotten and
    /// read as the counter at that moment (`floor`), newer than any version read before: at
    /// worst one spurious wake-up, never a lost one.
    let capacity: Int

    package init(capacity: Int = 100_000) {
        self.capacity = max(16, capacity)
    }

    /// The version of `key` now.
    package func version(_ key: WaitKey) -> UInt64 {
        state.withLock { $0.versions[key] ?? $0.floor }
    }

    /// Calls `wake` once `key` changes from `version`. Returns a ticket for `leave`, or nil
    /// when `wake` was called at once (it changed already, or the room is closed).
    package func enter(_ key: WaitKey, after version: UInt64, wake: @escaping @Sendable () -> Void) -> UInt64? {
        let ticket = state.withLock { state -> UInt64? in
            guard !state.closed, (state.versions[key] ?? state.floor) == version else { return nil }
            state.counter &+= 1
            state.waiters[key, default: [:]][state.counter] = wake
            state.count += 1
            return state.counter
        }
        if ticket == nil { wake() }
        return ticket
    }

    /// Takes the waiter `ticket` of `key` out (its deadline came first); false when it was
    /// woken already.
    @discardableResult
    package func leave(_ key: WaitKey, ticket: UInt64) -> Bool {
        state.withLock { state -> Bool in
            guard state.waiters[key]?.removeValue(forKey: ticket) != nil else { return false }
            state.count -= 1
            if state.waiters[key]?.isEmpty == true { state.waiters[key] = nil }
            return true
        }
    }

    /// `key` changed: every poll parked on it is woken.
    package func wake(_ key: WaitKey) {
        let woken = state.withLock { state -> [@Sendable () -> Void] in
            state.counter &+= 1
            if state.versions.count >= capacity {
                let waiters = state.waiters
                state.versions = state.versions.filter { waiters[$0.key] != nil }
                state.floor = state.counter
            }
            state.versions[key] = state.counter
            guard let waiting = state.waiters.removeValue(forKey: key) else { return [] }
            state.count -= waiting.count
            return Array(waiting.values)
        }
        for wake in woken { wake() }
    }

    /// Every key may have changed (notices from other instances were lost): every parked
    /// poll is woken, and every version read before now is stale, so a poll about to park
    /// with one is woken at once too.
    package func wakeEveryone() {
        let woken = state.withLock { state -> [@Sendable () -> Void] in
            state.counter &+= 1
            state.versions.removeAll()
            state.floor = state.counter
            let all = state.waiters.values.flatMap { $0.values }
            state.waiters.removeAll()
            state.count = 0
            return all
        }
        for wake in woken { wake() }
    }

    /// Wakes every parked poll and parks no more (the server stops).
    package func closeAll() {
        let woken = state.withLock { state -> [@Sendable () -> Void] in
            state.closed = true
            let all = state.waiters.values.flatMap { $0.values }
            state.waiters.removeAll()
            state.count = 0
            return all
        }
        for wake in woken { wake() }
    }

    /// Polls parked now (for /metrics and the tests).
    package var waiting: Int { state.withLock { $0.count } }
}

import Synchronization

/// Refused requests of addresses that are past their failure limit, counted in memory and
/// written as one `refusals` audit row per address and window (`window` seconds, aligned
/// to multiples of it), added to once a second by the group commit: a flood of refused
/// requests costs the disk a handful of rows, not one row each. At most `capacity`
/// addresses are counted apart; more are counted under `other`.
package final class RefusalCounter: Sendable {
    let window: Int64
    let capacity: Int
    private let state = Mutex(State())

    private struct State {
        var pending: [Key: Int64] = [:]
        var total: Int64 = 0
        /// Addresses and windows already announced in the log.
        var seen: Set<Key> = []
    }

    struct Key: Hashable, Sendable {
        let peer: [UInt8]
        let window: Int64
        let reason: ReasonCode
    }

    package init(window: Int64, capacity: Int = 10_000) {
        self.window = max(1, window)
        self.capacity = max(1, capacity)
    }

    /// Counts one refusal of `peer` at `now`; true when it is the first of that address in
    /// this window (the caller logs one line for it).
    @discardableResult
    package func add(peer: String, reason: ReasonCode, now: Int64) -> Bool {
        let start = now - ((now % window) + window) % window
        return state.withLock { state -> Bool in
            var key = Key(peer: Array(peer.utf8), window: start, reason: reason)
            if state.pending[key] == nil && state.pending.count >= capacity {
                key = Key(peer: Array("other".utf8), window: start, reason: reason)
            }
            state.pending[key, default: 0] += 1
            state.total += 1
            let first = !state.seen.contains(key)
            if first {
                if state.seen.count >= capacity { state.seen.removeAll(keepingCapacity: true) }
                state.seen.insert(key)
            }
            return first
        }
    }

    /// Refusals counted so far, written or not (for /metrics).
    package var counted: Int64 { state.withLock { $0.total } }

    /// What was counted since the last call, as write items (and forgets it).
    package func drain() -> [WriteItem] {
        let taken = state.withLock { state -> [Key: Int64] in
            let out = state.pending
            state.pending.removeAll(keepingCapacity: true)
            return out
        }
        return taken.map { key, count in
            .refusals(
                peer: String(decoding: key.peer, as: UTF8.self), window: key.window, count: count, reason: key.reason)
        }
    }
}

import Synchronization

/// Refusals that are audited once per window: the first refusal of a kind for one subject
/// (a user, a host) in a window writes its row, the rest only count in /metrics and the log.
/// Fifty requests in a minute for one user write one row, not fifty. At most `capacity`
/// subjects are remembered per window; past it every refusal is quiet until the next window.
package final class RefusalOnce: Sendable {
    let window: Int64
    let capacity: Int
    private struct Key: Hashable {
        let subject: String
        let reason: ReasonCode
    }
    private let seen = Mutex<(start: Int64, keys: Set<Key>)>((0, []))

    package init(window: Int64, capacity: Int = 10_000) {
        self.window = max(1, window)
        self.capacity = max(1, capacity)
    }

    /// Whether the refusal of `subject` for `reason` at `now` is the first of its window.
    package func first(_ subject: String, _ reason: ReasonCode, now: Int64) -> Bool {
        let start = now - ((now % window) + window) % window
        return seen.withLock { seen -> Bool in
            if seen.start != start {
                seen.start = start
                seen.keys.removeAll(keepingCapacity: true)
            }
            guard seen.keys.count < capacity else { return false }
            return seen.keys.insert(Key(subject: subject, reason: reason)).inserted
        }
    }
}

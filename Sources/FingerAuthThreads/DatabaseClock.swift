import FingerAuthCore
import FingerAuthSystem

/// The database's clock, read through this machine's: `now()` is the wall clock plus the
/// offset last measured against the database (`measure`). On PostgreSQL every instance of a
/// fleet then judges `exp`, `nbf` and `iat` by one clock — the one pruning uses — so an
/// instance whose own clock is off neither refuses good tokens nor outlives the fleet's
/// replay window. SQLite lives on this machine: its offset stays 0.
///
/// `@unchecked Sendable`: `offset` is read and written only under `lock`.
package final class DatabaseClock: Clock, @unchecked Sendable {
    private let lock = Lock()
    private var offset: Int64 = 0
    private let wall = SystemClock()

    package init() {}

    package func now() -> Int64 {
        let delta = lock.withLock { offset }
        return wall.now() &+ delta
    }

    /// Seconds the database's clock is ahead of this machine's (negative: behind).
    package var currentOffset: Int64 { lock.withLock { offset } }

    /// Reads the database's time with `databaseTime` and keeps the difference; returns it.
    /// The read's own duration (a round trip, well under a second) is below the resolution
    /// of whole seconds.
    @discardableResult
    package func measure<E: Error>(_ databaseTime: () throws(E) -> Int64) throws(E) -> Int64 {
        let before = wall.now()
        let database = try databaseTime()
        let after = wall.now()
        let delta = database &- (before &+ (after &- before) / 2)
        lock.withLock { offset = delta }
        return delta
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Where the verifier reads the time: whole seconds since the Unix epoch. Tests pass a
/// fake; the daemon passes `WallClock`.
public protocol AuthClock: Sendable {
    /// The current time in seconds since 1970-01-01T00:00:00Z.
    func now() -> Int64
}

/// The real-time clock (clock_gettime CLOCK_REALTIME), as JWT `exp`/`iat` use it.
public struct WallClock: AuthClock {
    public init() {}

    public func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }
}

/// The database's clock, read through this machine's: `now()` is the wall clock plus the
/// offset last measured against the database (`measure`). On PostgreSQL every instance of a
/// fleet then judges `exp`, `nbf` and `iat` by one clock — the one pruning uses — so an
/// instance whose own clock is off neither refuses good tokens nor outlives the fleet's
/// replay window. SQLite lives on this machine: its offset stays 0.
public final class DatabaseClock: AuthClock, @unchecked Sendable {
    private let lock = Lock()
    private var offset: Int64 = 0
    private let wall = WallClock()

    public init() {}

    public func now() -> Int64 {
        let delta = lock.withLock { offset }
        return wall.now() &+ delta
    }

    /// Seconds the database's clock is ahead of this machine's (negative: behind).
    public var currentOffset: Int64 { lock.withLock { offset } }

    /// Reads the database's time and keeps the difference; returns it. The read's own
    /// duration (a round trip, well under a second) is below the resolution of whole seconds.
    @discardableResult
    public func measure(_ store: any AuthStorage) throws(StoreError) -> Int64 {
        let before = wall.now()
        let database = try store.databaseTime()
        let after = wall.now()
        let delta = database &- (before &+ (after &- before) / 2)
        lock.withLock { offset = delta }
        return delta
    }
}

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

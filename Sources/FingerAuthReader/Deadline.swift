#if canImport(Glibc)
import Glibc
#endif

/// A point in time on the monotonic clock (`CLOCK_MONOTONIC`) after which a wait stops.
public struct Deadline: Sendable, Equatable {
    /// Nanoseconds on the monotonic clock.
    let instant: Int64

    /// Longest accepted wait: one day. Longer requests are cut to it.
    static let maxSeconds = 86_400.0

    /// `seconds` from now (negative, NaN or infinite values are clamped to 0 … one day).
    public static func after(seconds: Double) -> Deadline {
        let clamped = seconds.isFinite ? min(max(seconds, 0), maxSeconds) : maxSeconds
        return Deadline(instant: now() + Int64(clamped * 1_000_000_000))
    }

    /// Milliseconds left, 0 when the deadline has passed.
    public var remainingMilliseconds: Int {
        let left = instant - Deadline.now()
        return left > 0 ? Int(left / 1_000_000) : 0
    }

    /// True once the deadline has passed.
    public var hasPassed: Bool { remainingMilliseconds == 0 }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

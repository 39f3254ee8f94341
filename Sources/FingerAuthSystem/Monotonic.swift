import CSystem
import FingerAuthCore

/// A point on CLOCK_MONOTONIC, in milliseconds: deadlines that wall-clock changes cannot move.
package struct MonotonicInstant: Comparable, Sendable {
    package let milliseconds: Int64

    package static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(milliseconds: Int64(ts.tv_sec) &* 1000 &+ Int64(ts.tv_nsec) / 1_000_000)
    }

    package func adding(milliseconds ms: Int64) -> MonotonicInstant {
        MonotonicInstant(
            milliseconds: milliseconds.addingReportingOverflow(ms).overflow ? Int64.max : milliseconds + ms)
    }

    /// Milliseconds left until this instant, never negative, at most Int32.max.
    package var remaining: Int32 {
        let left = milliseconds &- MonotonicInstant.now().milliseconds
        return Int32(clamping: max(0, left))
    }

    package static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.milliseconds < b.milliseconds }
}

/// The wall clock (CLOCK_REALTIME), in seconds, for token times.
package struct SystemClock: Clock, Sendable {
    package init() {}
    package func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }
}

/// The kernel's random bytes (getrandom(2)); bounded retries on EINTR.
package struct SystemRandom: RandomSource {
    package init() {}
    package func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= 256 else { return nil }
        var out = [UInt8](repeating: 0, count: count)
        var filled = 0
        var attempts = 0
        while filled < count && attempts < 16 {
            attempts += 1
            let n = out.withUnsafeMutableBytes { fa_getrandom($0.baseAddress.map { $0 + filled }, count - filled) }
            if n > 0 { filled += n } else if fa_errno() != EINTR { return nil }
        }
        return filled == count ? out : nil
    }
}

/// This machine's host name (gethostname), the default token issuer.
package func currentHostName() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
    let bytes = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
    return bytes.isEmpty ? "localhost" : String(decoding: bytes, as: UTF8.self)
}

/// A point after which a wait stops: an instant on the monotonic clock.
package typealias Deadline = MonotonicInstant

extension MonotonicInstant {
    /// `seconds` from now, never sooner; negative, NaN and infinite values are clamped to
    /// 0 … one day. `now()` drops the part of a millisecond that has already gone, so the
    /// deadline is one millisecond later than the sum (else a 10 ms pause could end after
    /// 9.1 ms), and fractions of a millisecond round up.
    package static func after(seconds: Double) -> MonotonicInstant {
        let clamped = seconds.isFinite ? min(max(seconds, 0), 86_400) : 86_400
        return now().adding(milliseconds: Int64((clamped * 1000).rounded(.up)) + 1)
    }

    /// Milliseconds left, 0 once the deadline has passed.
    package var remainingMilliseconds: Int { Int(remaining) }

    /// True once the deadline has passed.
    package var hasPassed: Bool { remaining == 0 }
}

import FingerAuthSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class DeadlineTests: XCTestCase {
    private func nanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// The authenticator holds a 429 back "at least 10 ms" with such a deadline: it must not
    /// pass a fraction of a millisecond early, whenever within a millisecond it was made.
    func testADeadlineNeverPassesBeforeItsTime() {
        for round in 0..<40 {
            let seconds = round % 2 == 0 ? 0.010 : 0.0035
            let started = nanoseconds()
            let deadline = Deadline.after(seconds: seconds)
            while !deadline.hasPassed {}
            let elapsed = nanoseconds() - started
            XCTAssertGreaterThanOrEqual(elapsed, Int64(seconds * 1e9), "round \(round): passed after \(elapsed) ns")
            XCTAssertLessThan(elapsed, Int64(seconds * 1e9) + 50_000_000, "round \(round): \(elapsed) ns")
            usleep(UInt32(137 * (round % 7)))
        }
    }

    func testOutOfRangeSecondsAreClamped() {
        XCTAssertLessThanOrEqual(Deadline.after(seconds: -5).remainingMilliseconds, 1)
        XCTAssertLessThanOrEqual(Deadline.after(seconds: .nan).remainingMilliseconds, 86_400_001)
        XCTAssertGreaterThan(Deadline.after(seconds: .infinity).remainingMilliseconds, 86_000_000)
    }
}

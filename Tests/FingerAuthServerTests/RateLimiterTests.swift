import FingerAuthServer
import XCTest

/// Failure windows: the limit, the wait it announces, the window's end, and memory bounds.
final class RateLimiterTests: XCTestCase {
    func testLimitReachedThenWaitThenFreshWindow() {
        let limiter = FailureLimiter(RateLimit(failures: 3, window: 60))
        XCTAssertNil(limiter.retryAfter("alice", now: 100))
        for t in [100, 110, 120] as [Int64] { limiter.recordFailure("alice", now: t) }
        XCTAssertEqual(limiter.retryAfter("alice", now: 120), 40)
        XCTAssertEqual(limiter.retryAfter("alice", now: 159), 1)
        XCTAssertNil(limiter.retryAfter("bob", now: 120))
        XCTAssertNil(limiter.retryAfter("alice", now: 160))
        limiter.recordFailure("alice", now: 161)
        XCTAssertNil(limiter.retryAfter("alice", now: 161))
    }

    func testOffNeverLimits() {
        let limiter = FailureLimiter(.off)
        for t in 0..<1000 { limiter.recordFailure("x", now: Int64(t)) }
        XCTAssertNil(limiter.retryAfter("x", now: 999))
    }

    func testFullTableDropsExpiredWindowsAndFailsOpenForNewKeys() {
        let limiter = FailureLimiter(RateLimit(failures: 1, window: 10), capacity: 2)
        limiter.recordFailure("a", now: 0)
        limiter.recordFailure("b", now: 5)
        limiter.recordFailure("c", now: 6)  // full, nothing expired: not tracked
        XCTAssertNotNil(limiter.retryAfter("a", now: 6))
        XCTAssertNil(limiter.retryAfter("c", now: 6))
        limiter.recordFailure("c", now: 11)  // a expired and is dropped, c fits
        XCTAssertNotNil(limiter.retryAfter("c", now: 11))
    }
}

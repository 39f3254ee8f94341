import FingerAuthDomain
import XCTest

/// Failure windows and refusals counted together.
final class RateLimiterTests: XCTestCase {
    func testLimitReachedThenWaitThenFreshWindow() throws {
        let limiter = FailureLimiter(RateLimit(failures: 3, window: 60))
        XCTAssertNil(try limiter.retryAfter("alice", now: 100))
        for t in [100, 110, 120] as [Int64] { limiter.record("alice", now: t) }
        XCTAssertEqual(try limiter.retryAfter("alice", now: 120), 40)
        XCTAssertEqual(try limiter.retryAfter("alice", now: 159), 1)
        XCTAssertNil(try limiter.retryAfter("bob", now: 120))
        XCTAssertNil(try limiter.retryAfter("alice", now: 160))
        limiter.record("alice", now: 161)
        XCTAssertNil(try limiter.retryAfter("alice", now: 161))
    }

    func testKeysAreComparedByteForByte() throws {
        let limiter = FailureLimiter(RateLimit(failures: 1, window: 60))
        limiter.record("Kate@10.0.0.1", now: 0)
        XCTAssertNotNil(try limiter.retryAfter("Kate@10.0.0.1", now: 1))
        XCTAssertNil(try limiter.retryAfter("\u{212A}ate@10.0.0.1", now: 1))
    }

    func testOffNeverLimits() throws {
        let limiter = FailureLimiter(.off)
        for t in 0..<1000 { limiter.record("x", now: Int64(t)) }
        XCTAssertNil(try limiter.retryAfter("x", now: 999))
    }

    func testFullTableDropsExpiredWindowsAndFailsOpenForNewKeys() throws {
        let limiter = FailureLimiter(RateLimit(failures: 1, window: 10), capacity: 2)
        limiter.record("a", now: 0)
        limiter.record("b", now: 5)
        limiter.record("c", now: 6) // full, nothing expired: not tracked
        XCTAssertNotNil(try limiter.retryAfter("a", now: 6))
        XCTAssertNil(try limiter.retryAfter("c", now: 6))
        limiter.record("c", now: 11) // a expired and is dropped, c fits
        XCTAssertNotNil(try limiter.retryAfter("c", now: 11))
    }

    func testRefusalsAreCountedPerAddressAndWindow() throws {
        let counter = RefusalCounter(window: 300)
        XCTAssertTrue(counter.add(peer: "10.0.0.1", reason: .rateLimited, now: 1000))
        XCTAssertFalse(counter.add(peer: "10.0.0.1", reason: .rateLimited, now: 1100))
        XCTAssertTrue(counter.add(peer: "10.0.0.1", reason: .rateLimited, now: 1200))
        XCTAssertTrue(counter.add(peer: "10.0.0.2", reason: .rateLimited, now: 1200))
        let rows = counter.drain().compactMap { item -> String? in
            guard case let .refusals(peer, window, count, _) = item else { return nil }
            return "\(peer) \(window) \(count)"
        }.sorted()
        XCTAssertEqual(rows, ["10.0.0.1 1200 1", "10.0.0.1 900 2", "10.0.0.2 1200 1"])
        XCTAssertTrue(counter.drain().isEmpty)
        XCTAssertEqual(counter.counted, 4)
    }
}

import FingerAuthDomain
import FingerAuthStore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A stand-in connection: a number, and whether the server behind it went away.
final class StandInConnection {
    let number: Int
    var broken = false
    init(_ number: Int) { self.number = number }
}

/// Opens numbered connections, or fails once when told to.
final class Opener {
    private(set) var opened = 0
    var failNext = false

    func open() throws(StoreError) -> StandInConnection {
        if failNext {
            failNext = false
            throw StoreError("server refused the connection")
        }
        opened += 1
        return StandInConnection(opened)
    }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The pool the stores lend their connections from: reuse, the cap, the wait, broken
/// connections dropped and a read retried once, a closed pool.
final class ConnectionPoolTests: XCTestCase {
    let opener = Opener()

    func pool(capacity: Int = 2, waitSeconds: Int = 1) -> ConnectionPool<StandInConnection> {
        let opener = self.opener
        return ConnectionPool(
            name: "test", capacity: capacity, waitSeconds: waitSeconds,
            open: { () throws(StoreError) -> StandInConnection in try opener.open() }, usable: { !$0.broken })
    }

    func testAConnectionGivenBackIsLentAgain() throws {
        let pool = pool()
        let first = try pool.withConnection { $0.number }
        let second = try pool.withConnection { $0.number }
        XCTAssertEqual([first, second], [1, 1])
        XCTAssertEqual(opener.opened, 1)
    }

    func testACapacityBelowOneIsOne() {
        XCTAssertEqual(pool(capacity: 0).capacity, 1)
    }

    func testNestedBorrowersEachGetTheirOwnConnectionUpToTheCap() throws {
        let pool = pool(capacity: 2, waitSeconds: 1)
        let numbers = try pool.withConnection { (outer) throws(StoreError) -> [Int] in
            try pool.withConnection { (inner) throws(StoreError) -> [Int] in [outer.number, inner.number] }
        }
        XCTAssertEqual(numbers, [1, 2])
    }

    func testABorrowerPastTheCapWaitsItsTimeThenGetsAnError() throws {
        let pool = pool(capacity: 1, waitSeconds: 1)
        let started = monotonicSeconds()
        XCTAssertThrowsError(
            try pool.withConnection { (_) throws(StoreError) -> Int in try pool.withConnection { $0.number } }
        ) { error in
            XCTAssertEqual((error as? StoreError)?.message, "test: no free connection within 1 s (pool of 1)")
        }
        XCTAssertGreaterThanOrEqual(monotonicSeconds() - started, 0.9)
    }

    func testAConnectionThatBrokeIsDroppedAndAReadRunsOnceMoreOnAFreshOne() throws {
        let pool = pool()
        var runs: [Int] = []
        let value = try pool.withConnection { (connection) throws(StoreError) -> String in
            runs.append(connection.number)
            if connection.number == 1 {
                connection.broken = true
                throw StoreError("server closed the connection unexpectedly")
            }
            return "read"
        }
        XCTAssertEqual(value, "read")
        XCTAssertEqual(runs, [1, 2])
        XCTAssertEqual(try pool.withConnection { $0.number }, 2, "the broken one is not lent again")
    }

    func testAWriteIsNotRepeatedOnAFreshConnection() {
        let pool = pool()
        var runs = 0
        XCTAssertThrowsError(
            try pool.withConnection(retry: false) { (connection) throws(StoreError) -> Int in
                runs += 1
                connection.broken = true
                throw StoreError("server closed the connection unexpectedly")
            }
        ) { XCTAssertEqual(($0 as? StoreError)?.message, "server closed the connection unexpectedly") }
        XCTAssertEqual(runs, 1)
    }

    func testAnErrorOnAWorkingConnectionIsNotRetried() {
        let pool = pool()
        var runs = 0
        XCTAssertThrowsError(
            try pool.withConnection { (_) throws(StoreError) -> Int in
                runs += 1
                throw StoreError("UNIQUE constraint failed")
            })
        XCTAssertEqual(runs, 1)
        XCTAssertEqual(opener.opened, 1)
    }

    func testAConnectionThatCannotBeOpenedFreesItsPlace() throws {
        let pool = pool(capacity: 1)
        opener.failNext = true
        XCTAssertThrowsError(try pool.withConnection { $0.number }) {
            XCTAssertEqual(($0 as? StoreError)?.message, "server refused the connection")
        }
        XCTAssertEqual(try pool.withConnection { $0.number }, 1, "the failed open did not keep the only place")
    }

    func testAClosedPoolRefusesEveryBorrower() {
        let pool = pool()
        pool.close()
        XCTAssertThrowsError(try pool.withConnection { $0.number }) {
            XCTAssertEqual(($0 as? StoreError)?.message, "test: store closed")
        }
        XCTAssertEqual(opener.opened, 0)
    }
}

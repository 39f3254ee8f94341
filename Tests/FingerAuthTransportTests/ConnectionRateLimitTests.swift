import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads
import FingerAuthTransport
import XCTest

/// New connections per address: the token bucket, who shares one, who is exempt, and the
/// table's bound — with the clock given, so every figure is exact.
final class ConnectionRateLimitTests: XCTestCase {
    let a: [UInt8] = [192, 0, 2, 7]
    let b: [UInt8] = [192, 0, 2, 8]

    func testTheBurstThenTheRate() {
        let limit = ConnectionRateLimit(.init(rate: 2, burst: 3))
        XCTAssertEqual((0..<5).map { _ in limit.admit(a, now: 10) }, [true, true, true, false, false])
        XCTAssertTrue(limit.admit(b, now: 10), "another address has its own bucket")
        XCTAssertFalse(limit.admit(a, now: 10.4), "0.8 of a token is not a connection")
        XCTAssertTrue(limit.admit(a, now: 10.5))
        XCTAssertFalse(limit.admit(a, now: 10.5))
        XCTAssertEqual(
            (0..<4).map { _ in limit.admit(a, now: 100) }, [true, true, true, false], "refills up to the burst only")
    }

    func testAClockThatGoesBackGivesNothing() {
        let limit = ConnectionRateLimit(.init(rate: 1, burst: 1))
        XCTAssertTrue(limit.admit(a, now: 50))
        XCTAssertFalse(limit.admit(a, now: 40))
        XCTAssertFalse(limit.admit(a, now: 50.5))
    }

    func testIPv6CountsBySlash64AndMappedIPv4AsIPv4() {
        let limit = ConnectionRateLimit(.init(rate: 1, burst: 1))
        let host1: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0, 1]
        let host2: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1] + [0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4]
        let otherNet: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 2] + [0, 0, 0, 0, 0, 0, 0, 1]
        XCTAssertTrue(limit.admit(host1, now: 1))
        XCTAssertFalse(limit.admit(host2, now: 1), "one /64, one bucket")
        XCTAssertTrue(limit.admit(otherNet, now: 1))
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + a
        XCTAssertTrue(limit.admit(mapped, now: 1))
        XCTAssertFalse(limit.admit(a, now: 1), "::ffff:192.0.2.7 is 192.0.2.7")
    }

    func testTrustedProxiesAreExempt() throws {
        let proxies = try XCTUnwrap(ClientAddress.networks("192.0.2.0/29"))
        let limit = ConnectionRateLimit(.init(rate: 1, burst: 1), exempt: proxies)
        XCTAssertEqual((0..<50).filter { _ in limit.admit(a, now: 1) }.count, 50)
        XCTAssertEqual(limit.tracked, 0)
        XCTAssertEqual((0..<3).map { _ in limit.admit(b, now: 1) }, [true, false, false], "192.0.2.8 is outside /29")
    }

    func testARateOfZeroIsOff() {
        let limit = ConnectionRateLimit(.off)
        XCTAssertFalse(limit.enabled)
        XCTAssertEqual((0..<1000).filter { _ in limit.admit(a, now: 1) }.count, 1000)
        XCTAssertEqual(limit.tracked, 0)
    }

    func testTheTableIsBoundedAndIdleAddressesGoFirst() {
        let limit = ConnectionRateLimit(.init(rate: 1, burst: 2), capacity: 4)
        for i in 1...4 { XCTAssertTrue(limit.admit([10, 0, 0, UInt8(i)], now: 0)) }
        XCTAssertEqual(limit.tracked, 4)
        // full of addresses still refilling: a new one is let through untracked
        XCTAssertTrue(limit.admit([10, 0, 0, 9], now: 0.5))
        XCTAssertEqual(limit.tracked, 4)
        // once the four refilled (1 s at 1/s gives back the one used), they are dropped —
        // by a sweep at most once a second, so a crowd cannot make every accept walk the table
        XCTAssertTrue(limit.admit([10, 0, 0, 10], now: 5))
        XCTAssertEqual(limit.tracked, 1)
        for i in 11...13 { XCTAssertTrue(limit.admit([10, 0, 0, UInt8(i)], now: 5)) }
        XCTAssertTrue(limit.admit([10, 0, 0, 14], now: 5.5))
        XCTAssertEqual(limit.tracked, 4, "full again, and the last sweep was 0.5 s ago: let through untracked")
        XCTAssertTrue(limit.admit([10, 0, 0, 15], now: 6.5))
        XCTAssertEqual(limit.tracked, 1, "a second later the sweep finds the four idle again")
        let loggedLines = LockedLines()
        let logging = ConnectionRateLimit(.init(rate: 1, burst: 1), log: { loggedLines.append($0) })
        for t in stride(from: 0.0, to: 130, by: 0.5) { _ = logging.admit(a, now: t) }
        XCTAssertEqual(loggedLines.count, 3, "an address at its limit for 130 s is logged at 0, 60 and 120 s")
    }
}

/// Simultaneous connections per address (`max-connections-per-address`): counted by the
/// same key as every other limit, so a /64 is one address.
final class ConnectionCapTests: XCTestCase {
    let net: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1]

    func testAnIPv6Slash64SharesOneCap() throws {
        let cap = ConnectionCap(limit: 3)
        let hosts = (1...5).map { net + [0, 0, 0, 0, 0, 0, 0, UInt8($0)] }
        for host in hosts.prefix(3) {
            XCTAssertTrue(cap.hasRoom(host, now: 1))
            XCTAssertTrue(cap.open(try XCTUnwrap(cap.key(host)), now: 1))
        }
        XCTAssertFalse(cap.hasRoom(hosts[3], now: 1), "a fourth address of the same /64 finds it full")
        XCTAssertFalse(cap.open(try XCTUnwrap(cap.key(hosts[4])), now: 1), "counted exactly when two accepts race")
        XCTAssertEqual(cap.count(hosts[0]), 4)
        let elsewhere: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 2] + [0, 0, 0, 0, 0, 0, 0, 1]
        XCTAssertTrue(cap.hasRoom(elsewhere, now: 1))
        cap.close(try XCTUnwrap(cap.key(hosts[4])))
        cap.close(try XCTUnwrap(cap.key(hosts[1])))
        XCTAssertTrue(cap.hasRoom(hosts[3], now: 1), "room again once connections closed")
        XCTAssertEqual(cap.count(hosts[2]), 2)
    }

    func testTrustedProxiesAndACapOfZeroAreNotCounted() throws {
        let proxy: [UInt8] = [192, 0, 2, 1]
        let cap = ConnectionCap(limit: 1, exempt: try XCTUnwrap(ClientAddress.networks("192.0.2.0/29")))
        XCTAssertNil(cap.key(proxy))
        XCTAssertTrue((0..<10).allSatisfy { _ in cap.hasRoom(proxy, now: 1) })
        XCTAssertNil(ConnectionCap(limit: 0).key([192, 0, 2, 9]))
        let lines = LockedLines()
        let logging = ConnectionCap(limit: 1, log: { lines.append($0) })
        let key = try XCTUnwrap(logging.key(net + [0, 0, 0, 0, 0, 0, 0, 1]))
        XCTAssertTrue(logging.open(key, now: 0))
        for t in stride(from: 0.0, to: 130, by: 0.5) { _ = logging.hasRoom(net + [9, 9, 9, 9, 9, 9, 9, 9], now: t) }
        XCTAssertEqual(lines.count, 3, "logged at most once a minute")
        XCTAssertTrue(
            lines.lines[0].hasPrefix("refusing connections from 2001:db8:0:1::: it holds 1 already"), lines.lines[0])
    }
}

/// The lines a limiter logged (its log closure runs on the caller's thread here).
///
/// `@unchecked Sendable`: `lines` only under `lock`.
final class LockedLines: @unchecked Sendable {
    private let lock = Lock()
    private var logged: [String] = []
    func append(_ line: String) { lock.withLock { logged.append(line) } }
    var lines: [String] { lock.withLock { logged } }
    var count: Int { lines.count }
}

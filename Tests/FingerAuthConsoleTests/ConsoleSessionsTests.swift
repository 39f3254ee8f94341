import FingerAuthConsole
import FingerAuthDomain
import XCTest

/// Signed-in sessions and the sign-in limit, as an admin's browser meets them.
final class ConsoleSessionsTests: XCTestCase {
    func sessions(idle: Int64 = 900, absolute: Int64 = 28_800) -> ConsoleSessions {
        ConsoleSessions(idleSeconds: idle, absoluteSeconds: absolute)
    }

    func testASessionIsFoundByItsCookieWithItsAdminAndATokenForItsForms() throws {
        let store = sessions()
        let cookie = try XCTUnwrap(store.open(admin: "root", passwordHash: "h1", now: 1000))
        XCTAssertEqual(cookie.utf8.count, 43)
        let session = try XCTUnwrap(store.find(cookie, now: 1001))
        XCTAssertEqual(session.admin, "root")
        XCTAssertEqual(session.passwordHash, "h1")
        XCTAssertEqual(session.csrf.utf8.count, 32)
        XCTAssertNotEqual(session.csrf, cookie)
    }

    func testEachSignInGetsANewCookie() throws {
        let store = sessions()
        let a = try XCTUnwrap(store.open(admin: "root", passwordHash: "h", now: 1))
        let b = try XCTUnwrap(store.open(admin: "root", passwordHash: "h", now: 1))
        XCTAssertNotEqual(a, b)
        XCTAssertNotEqual(store.find(a, now: 2)?.csrf, store.find(b, now: 2)?.csrf)
    }

    func testAnUnknownOrMalformedCookieFindsNothing() throws {
        let store = sessions()
        _ = store.open(admin: "root", passwordHash: "h", now: 1)
        XCTAssertNil(store.find(nil, now: 2))
        XCTAssertNil(store.find("short", now: 2))
        XCTAssertNil(store.find(String(repeating: "A", count: 43), now: 2))
    }

    func testASessionEndsAfterItsIdleTimeButEachRequestRestartsIt() throws {
        let store = sessions(idle: 100)
        let cookie = try XCTUnwrap(store.open(admin: "root", passwordHash: "h", now: 0))
        XCTAssertNotNil(store.find(cookie, now: 90))
        XCTAssertNotNil(store.find(cookie, now: 180), "90 s after the last request")
        XCTAssertNil(store.find(cookie, now: 281))
        XCTAssertNil(store.find(cookie, now: 200), "gone once expired")
    }

    func testASessionEndsAtItsAbsoluteTimeWhateverItsUse() throws {
        let store = sessions(idle: 100, absolute: 250)
        let cookie = try XCTUnwrap(store.open(admin: "root", passwordHash: "h", now: 0))
        for now in stride(from: Int64(50), through: 250, by: 50) { XCTAssertNotNil(store.find(cookie, now: now)) }
        XCTAssertNil(store.find(cookie, now: 251))
    }

    func testSigningOutEndsTheSession() throws {
        let store = sessions()
        let cookie = try XCTUnwrap(store.open(admin: "root", passwordHash: "h", now: 0))
        store.close(cookie)
        XCTAssertNil(store.find(cookie, now: 1))
    }

    func testPastTheCapacityTheOldestSessionGoesFirst() throws {
        let store = sessions()
        let first = try XCTUnwrap(store.open(admin: "a0", passwordHash: "h", now: 0))
        var last = ""
        for n in 1...ConsoleSessions.capacity {
            last = try XCTUnwrap(store.open(admin: "a\(n)", passwordHash: "h", now: Int64(n)))
        }
        XCTAssertNil(store.find(first, now: 300))
        XCTAssertEqual(store.find(last, now: 300)?.admin, "a\(ConsoleSessions.capacity)")
    }

    // MARK: - the sign-in limit

    func testFiveAttemptsAreAdmittedAndTheSixthIsNot() throws {
        let limiter = SignInLimiter(limit: 5, window: 300)
        for n in 0..<5 { XCTAssertTrue(try limiter.admit(["addr:192.0.2.1", "admin:root"], now: Int64(n))) }
        XCTAssertFalse(try limiter.admit(["addr:192.0.2.1", "admin:root"], now: 10))
        XCTAssertFalse(try limiter.admit(["addr:192.0.2.9", "admin:root"], now: 10), "the admin's own count")
        XCTAssertTrue(try limiter.admit(["addr:192.0.2.9", "admin:other"], now: 10))
    }

    func testTheWindowEndsAndTheCountStartsAgain() throws {
        let limiter = SignInLimiter(limit: 2, window: 300)
        XCTAssertTrue(try limiter.admit(["k"], now: 0))
        XCTAssertTrue(try limiter.admit(["k"], now: 1))
        XCTAssertFalse(try limiter.admit(["k"], now: 299))
        XCTAssertTrue(try limiter.admit(["k"], now: 300))
    }

    func testASuccessTakesItsAttemptBack() throws {
        let limiter = SignInLimiter(limit: 2, window: 300)
        XCTAssertTrue(try limiter.admit(["k"], now: 0))
        limiter.succeeded(["k"], now: 0)
        XCTAssertTrue(try limiter.admit(["k"], now: 1))
        XCTAssertTrue(try limiter.admit(["k"], now: 2))
        XCTAssertFalse(try limiter.admit(["k"], now: 3))
    }

    func testARefusedAttemptIsNotCountedAgainstTheOtherKeys() throws {
        let limiter = SignInLimiter(limit: 1, window: 300)
        XCTAssertTrue(try limiter.admit(["addr"], now: 0))
        XCTAssertFalse(try limiter.admit(["addr", "admin:root"], now: 1))
        XCTAssertTrue(try limiter.admit(["admin:root"], now: 2), "refused at the address, root was not counted")
    }
}

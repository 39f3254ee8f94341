import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthTransport
import XCTest

/// An SQLite store that, like PostgresStore, keeps the rate-limit counts itself (in a
/// dictionary here, written through `commit`'s failure items); `failing` makes the counter
/// throw like an unreachable database.
///
/// `@unchecked Sendable`: `windows` and `failing` are used by one test thread at a time
/// (these tests run the service synchronously).
final class SharedCountsStore: ForwardingStore, @unchecked Sendable {
    var windows: [String: FailureWindow] = [:]
    var failing = false

    override var sharesFailureCounts: Bool { true }

    override func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? {
        if failing { throw StoreError("disk on fire") }
        return windows[key].flatMap { now < $0.end ? $0 : nil }
    }

    override func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] {
        if failing { throw StoreError("disk on fire") }
        for case let .failure(key, now, window) in items {
            if var open = windows[key], now < open.end {
                open.count += 1
                windows[key] = open
            } else {
                windows[key] = FailureWindow(count: 1, end: now + window)
            }
        }
        return try base.commit(items)
    }
}

/// Failure limits counted in the store: two services on one store count together, and a
/// counter that cannot be reached fails closed.
final class SharedLimitTests: XCTestCase {
    var temp = TempDatabase()
    var clock = FakeClock()

    override func setUp() {
        temp = TempDatabase()
        clock = FakeClock()
    }

    override func tearDown() { temp.cleanup() }

    func login(_ service: AuthenticatorService, _ maker: TokenMaker, aud: String, jti: String) -> HTTPResponse {
        let jwt = maker.token(TokenMaker.claims(now: clock.now(), aud: .string(aud), jti: jti))
        return service.handle(
            HTTPRequest(
                method: "POST", path: "/v1/login", contentType: "application/json",
                body: Array("{\"jwt\":\"\(jwt)\"}".utf8), peer: "127.0.0.1"))
    }

    func makeServices() throws -> (SharedCountsStore, AuthenticatorService, AuthenticatorService, TokenMaker) {
        let store = SharedCountsStore(try SQLiteStore(path: temp.path))
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        _ = try store.register(
            RegisteredKey(
                kid: maker.kid, user: "alice", host: "host1", jwk: maker.jwk,
                status: .active, created: clock.now()),
            proofJTI: "proof", keepUntil: clock.now() + 600,
            audit: AuditEvent(event: .register, outcome: .deny), now: clock.now())
        var settings = ServiceSettings()
        settings.userLimit = RateLimit(failures: 3, window: 60)
        settings.addressLimit = .off
        let policy = VerifierPolicy(audience: "aud")
        let a = wiredService(
            store: store, policy: policy, settings: settings, clock: clock,
            log: RequestLog(fd: -1))
        let b = wiredService(
            store: store, policy: policy, settings: settings, clock: clock,
            log: RequestLog(fd: -1))
        return (store, a, b, maker)
    }

    func testTwoServicesOnOneStoreCountOneUsersFailuresTogether() throws {
        let (store, a, b, maker) = try makeServices()
        XCTAssertEqual(login(a, maker, aud: "wrong", jti: "f1").status, 401)
        XCTAssertEqual(login(a, maker, aud: "wrong", jti: "f2").status, 401)
        XCTAssertEqual(login(b, maker, aud: "wrong", jti: "f3").status, 401)
        XCTAssertEqual(store.windows["user:alice@127.0.0.1"]?.count, 3)
        for service in [a, b] {
            let limited = login(service, maker, aud: "aud", jti: "ok-\(service === a)")
            XCTAssertEqual(limited.status, 429)
            XCTAssertTrue(limited.headers.contains { $0.0 == "Retry-After" && $0.1 == "60" })
        }
        clock.current += 60
        XCTAssertEqual(login(b, maker, aud: "aud", jti: "later").status, 200)
    }

    func testACounterThatCannotBeReachedFailsClosed() throws {
        let (store, a, _, maker) = try makeServices()
        store.failing = true
        XCTAssertEqual(login(a, maker, aud: "aud", jti: "valid").status, 503)
        XCTAssertEqual(login(a, maker, aud: "wrong", jti: "bad").status, 503)
        store.failing = false
        XCTAssertEqual(
            login(a, maker, aud: "aud", jti: "valid").status, 200, "the refused attempt did not use up its jti")
    }
}

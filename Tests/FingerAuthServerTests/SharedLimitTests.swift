import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthTransport
import FingerAuthWeb
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
    /// The reads the service asked for, by name: on PostgreSQL each is a round trip.
    var reads: [String] = []

    override var sharesFailureCounts: Bool { true }

    override func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? {
        reads.append("failureWindow")
        if failing { throw StoreError("disk on fire") }
        return windows[key].flatMap { now < $0.end ? $0 : nil }
    }

    override func policySnapshot(user: String, host: String) throws(StoreError) -> PolicySnapshot {
        reads.append("policySnapshot")
        return try super.policySnapshot(user: user, host: host)
    }

    override func loginReads(user: String, host: String, failureKeys: [String], now: Int64) throws(StoreError)
        -> LoginReads
    {
        reads.append("loginReads")
        if failing { throw StoreError("disk on fire") }
        let windows = self.windows.filter { failureKeys.contains($0.key) && now < $0.value.end }
        return LoginReads(
            user: user, host: host, policy: try base.policySnapshot(user: user, host: host),
            keys: failureKeys, windows: windows)
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
final class SharedLimitTests: DatabaseTestCase {
    func login(_ service: AuthenticatorService, _ maker: TokenMaker, aud: String, jti: String) -> HTTPResponse {
        post(service, maker.token(TokenMaker.claims(now: clock.now(), aud: .string(aud), jti: jti)))
    }

    func post(_ service: AuthenticatorService, _ jwt: String) -> HTTPResponse {
        service.handle(
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

    /// A login's limits and policy are one read (on PostgreSQL one round trip, before the
    /// claim's write), whether the token is accepted or refused after verification.
    func testALoginReadsItsLimitsAndPolicyOnceBeforeItsWrite() throws {
        let (store, a, _, maker) = try makeServices()
        XCTAssertEqual(login(a, maker, aud: "aud", jti: "valid").status, 200)
        XCTAssertEqual(store.reads, ["loginReads"])
        store.reads = []
        XCTAssertEqual(login(a, maker, aud: "wrong", jti: "refused").status, 401)
        XCTAssertEqual(store.reads, ["loginReads"])
    }

    /// The reads go by what the token claims; a token whose key belongs to another user than
    /// its `sub` is limited by the key's user, read for that user, not by the claimed one's
    /// (empty) window.
    func testATokenClaimingAnotherUserIsLimitedByItsKeysUser() throws {
        let (store, a, _, maker) = try makeServices()
        store.windows["user:alice@127.0.0.1"] = FailureWindow(count: 3, end: clock.now() + 60)
        let jwt = maker.token(TokenMaker.claims(now: clock.now(), sub: "bob", jti: "as-bob"))
        let answer = post(a, jwt)
        XCTAssertEqual(answer.status, 429)
        XCTAssertEqual(store.reads, ["loginReads", "failureWindow"])
    }

    /// A token naming no valid user name makes no login reads (nothing to fetch them by).
    func testATokenNamingNoValidUserMakesNoLoginReads() throws {
        let (store, a, _, maker) = try makeServices()
        let jwt = maker.token(TokenMaker.claims(now: clock.now(), sub: "Not A Name", jti: "bad-name"))
        let answer = post(a, jwt)
        XCTAssertEqual(answer.status, 400)
        XCTAssertFalse(store.reads.contains("loginReads"))
    }
}

import FingerAuthCore
import FingerAuthServer
import XCTest

/// An SQLite store that, like PostgresStore, keeps the rate-limit counts itself (in a
/// dictionary here); `failing` makes the counter throw like an unreachable database.
final class SharedCountsStore: AuthStorage, @unchecked Sendable {
    let base: AuthStore
    var windows: [String: FailureWindow] = [:]
    var failing = false

    init(_ base: AuthStore) { self.base = base }

    var sharesFailureCounts: Bool { true }

    func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? {
        if failing { throw StoreError("disk on fire") }
        return windows[key].flatMap { now < $0.end ? $0 : nil }
    }

    func recordFailure(key: String, now: Int64, window: Int64) throws(StoreError) {
        if failing { throw StoreError("disk on fire") }
        if var open = windows[key], now < open.end {
            open.count += 1
            windows[key] = open
        } else {
            windows[key] = FailureWindow(count: 1, end: now + window)
        }
    }

    func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? { try base.registeredKey(kid: kid) }
    func claimOnce(jti: String, exp: Int64, purgeBefore: Int64) throws(StoreError) -> Bool {
        try base.claimOnce(jti: jti, exp: exp, purgeBefore: purgeBefore)
    }
    func close() { base.close() }
    func health() -> StoreHealth { base.health() }
    func listKeys() throws(StoreError) -> [RegisteredKey] { try base.listKeys() }
    func register(_ key: RegisteredKey) throws(StoreError) -> RegistrationResult { try base.register(key) }
    func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult { try base.revoke(kid: kid, now: now) }
    func approve(kid: String) throws(StoreError) -> ApprovalResult { try base.approve(kid: kid) }
    func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)] { try base.keyCounts() }
    func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        try base.createHostToken(host: host, now: now)
    }
    func host(forToken token: String) throws(StoreError) -> String? { try base.host(forToken: token) }
    func listHostTokens() throws(StoreError) -> [HostTokenRecord] { try base.listHostTokens() }
    func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> [String] {
        try base.revokeHostTokens(id: id, host: host, now: now)
    }
    func storeAccessToken(sha256: String, user: String, host: String, kid: String,
                          now: Int64, expires: Int64) throws(StoreError) {
        try base.storeAccessToken(sha256: sha256, user: user, host: host, kid: kid, now: now, expires: expires)
    }
    func audit(_ event: AuditEvent, now: Int64) throws(StoreError) { try base.audit(event, now: now) }
    func auditRecords(user: String?, since: Int64?, limit: Int) throws(StoreError) -> [AuditRecord] {
        try base.auditRecords(user: user, since: since, limit: limit)
    }
    func prune(now: Int64, replayBefore: Int64, auditBefore: Int64?) throws(StoreError) -> PruneResult {
        try base.prune(now: now, replayBefore: replayBefore, auditBefore: auditBefore)
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
        return service.handle(HTTPRequest(method: "POST", path: "/v1/login", contentType: "application/json",
                                          body: Array("{\"jwt\":\"\(jwt)\"}".utf8), peer: "127.0.0.1"))
    }

    func makeServices() throws -> (SharedCountsStore, AuthenticatorService, AuthenticatorService, TokenMaker) {
        let store = SharedCountsStore(try AuthStore(path: temp.path))
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        _ = try store.register(RegisteredKey(kid: maker.kid, user: "alice", host: "host1", jwk: maker.jwk,
                                             status: .active, created: clock.now()))
        var settings = ServiceSettings()
        settings.userLimit = RateLimit(failures: 3, window: 60)
        settings.addressLimit = .off
        let policy = VerifierPolicy(audience: "aud")
        let a = AuthenticatorService(store: store, policy: policy, settings: settings, clock: clock,
                                     log: RequestLog(fd: -1))
        let b = AuthenticatorService(store: store, policy: policy, settings: settings, clock: clock,
                                     log: RequestLog(fd: -1))
        return (store, a, b, maker)
    }

    func testTwoServicesOnOneStoreCountOneUsersFailuresTogether() throws {
        let (store, a, b, maker) = try makeServices()
        XCTAssertEqual(login(a, maker, aud: "wrong", jti: "f1").status, 401)
        XCTAssertEqual(login(a, maker, aud: "wrong", jti: "f2").status, 401)
        XCTAssertEqual(login(b, maker, aud: "wrong", jti: "f3").status, 401)
        XCTAssertEqual(store.windows["user:alice"]?.count, 3)
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
        XCTAssertEqual(try store.auditEvents().last?.outcome, "error")
    }
}

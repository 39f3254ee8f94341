import FingerAuthCore
import FingerAuthCrypto
import FingerAuthServer
import XCTest

/// The SQLite registry on a real file: keys, host tokens, replay table, audit.
final class AuthStoreTests: XCTestCase {
    var temp = TempDatabase()

    override func setUp() { temp = TempDatabase() }
    override func tearDown() { temp.cleanup() }

    func key(_ kid: String, user: String = "alice", host: String = "host1") throws -> RegisteredKey {
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        return RegisteredKey(kid: kid, user: user, host: host, jwk: maker.jwk, status: .active, created: 10)
    }

    func testRegistrationOutcomes() throws {
        let store = try AuthStore(path: temp.path)
        XCTAssertEqual(try store.register(key("k1")), .created)
        XCTAssertEqual(try store.register(key("k1")), .alreadyRegistered)
        XCTAssertEqual(try store.register(key("k1", user: "bob")), .conflict)
        XCTAssertEqual(try store.register(key("k1", host: "host2")), .conflict)
        XCTAssertEqual(try store.revoke(kid: "k1", now: 20), .revoked)
        XCTAssertEqual(try store.revoke(kid: "k1", now: 21), .alreadyRevoked)
        XCTAssertEqual(try store.revoke(kid: "nope", now: 21), .unknown)
        XCTAssertEqual(try store.register(key("k1")), .revoked)
        let stored = try XCTUnwrap(try store.registeredKey(kid: "k1"))
        XCTAssertEqual(stored.status, .revoked)
        XCTAssertEqual(stored.jwk, try key("k1").jwk)
        XCTAssertEqual(try store.listKeys().map(\.kid), ["k1"])
    }

    func testHostTokensAreStoredAsHashesAndLookedUp() throws {
        let store = try AuthStore(path: temp.path)
        let token = try store.createHostToken(host: "host1", now: 5)
        XCTAssertEqual(token.utf8.count, 43)
        XCTAssertEqual(try store.host(forToken: token), "host1")
        XCTAssertNil(try store.host(forToken: String(token.dropLast()) + (token.hasSuffix("A") ? "B" : "A")))
        XCTAssertNil(try store.host(forToken: "' OR 1=1 --"))
        XCTAssertEqual(HostToken.hash(token)?.utf8.count, 64)
    }

    func testReplayClaimIsOnceAndPurged() throws {
        let store = try AuthStore(path: temp.path)
        XCTAssertTrue(try store.claimOnce(jti: "a", exp: 100, purgeBefore: 0))
        XCTAssertFalse(try store.claimOnce(jti: "a", exp: 100, purgeBefore: 0))
        XCTAssertTrue(try store.claimOnce(jti: "b", exp: 200, purgeBefore: 150))
        XCTAssertTrue(try store.claimOnce(jti: "a", exp: 300, purgeBefore: 150))
    }

    func testAuditRowsKeepEveryField() throws {
        let store = try AuthStore(path: temp.path)
        let event = AuditEvent(event: "login", user: "alice", host: "h", kid: "k", jti: "j",
                               outcome: "deny", reason: "expired", peer: "127.0.0.1")
        try store.audit(event, now: 7)
        XCTAssertEqual(try store.auditEvents(), [event])
    }

    func testReopeningKeepsDataAndClosedStoreThrows() throws {
        do {
            let store = try AuthStore(path: temp.path)
            XCTAssertEqual(try store.register(key("k2")), .created)
            store.close()
            XCTAssertThrowsError(try store.listKeys())
        }
        let again = try AuthStore(path: temp.path)
        XCTAssertEqual(try again.listKeys().map(\.kid), ["k2"])
    }
}

/// Version 2 of the registry: host token listing and revocation, access tokens, audit queries.
final class AuthStoreV2Tests: XCTestCase {
    var temp = TempDatabase()

    override func setUp() { temp = TempDatabase() }
    override func tearDown() { temp.cleanup() }

    func testHostTokensAreListedByIdAndRevokedByIdOrHost() throws {
        let store = try AuthStore(path: temp.path)
        let a = try store.createHostToken(host: "h1", now: 1)
        let b = try store.createHostToken(host: "h1", now: 2)
        _ = try store.createHostToken(host: "h2", now: 3)
        let listed = try store.listHostTokens()
        XCTAssertEqual(listed.map(\.host), ["h1", "h1", "h2"])
        let idA = try XCTUnwrap(HostToken.hash(a)).prefix(16)
        XCTAssertEqual(listed[0].id, String(idA))
        XCTAssertEqual(try store.revokeHostTokens(id: String(idA), host: nil, now: 5), ["h1"])
        XCTAssertNil(try store.host(forToken: a))
        XCTAssertEqual(try store.host(forToken: b), "h1")
        XCTAssertEqual(try store.revokeHostTokens(id: "' OR 1=1 --", host: nil, now: 5), [])
        XCTAssertEqual(try store.revokeHostTokens(id: nil, host: "h1", now: 6), ["h1"])
        XCTAssertNil(try store.host(forToken: b))
        XCTAssertEqual(try store.listHostTokens().map { $0.revoked != nil }, [true, true, false])
    }

    func testAuditRecordsFilterByUserAndTime() throws {
        let store = try AuthStore(path: temp.path)
        for (t, user) in [(10, "alice"), (20, "bob"), (30, "alice")] as [(Int64, String)] {
            try store.audit(AuditEvent(event: "login", user: user, outcome: "accept"), now: t)
        }
        XCTAssertEqual(try store.auditRecords(user: "alice", since: nil, limit: 10).map(\.time), [10, 30])
        XCTAssertEqual(try store.auditRecords(user: nil, since: 20, limit: 10).map(\.time), [20, 30])
        XCTAssertEqual(try store.auditRecords(user: nil, since: nil, limit: 1).map(\.time), [30])
    }

    func testPendingKeysRegisterAsPending() throws {
        let store = try AuthStore(path: temp.path)
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let key = RegisteredKey(kid: "p1", user: "alice", host: "h", jwk: maker.jwk, status: .pending, created: 1)
        XCTAssertEqual(try store.register(key), .created)
        XCTAssertEqual(try store.register(key), .alreadyRegistered)
        XCTAssertEqual(try store.registeredKey(kid: "p1")?.status, .pending)
        XCTAssertEqual(try store.revoke(kid: "p1", now: 2), .revoked)
        XCTAssertEqual(try store.approve(kid: "nope"), .unknown)
    }
}

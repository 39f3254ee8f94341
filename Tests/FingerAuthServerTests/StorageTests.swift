import FingerAuthCore
import FingerAuthServer
import XCTest

/// Choosing the store from `--db`, keeping passwords out of what is logged, pruning.
final class StorageTests: XCTestCase {
    var temp = TempDatabase()

    override func setUp() { temp = TempDatabase() }
    override func tearDown() { temp.cleanup() }

    func testLocationIsPostgresOnlyForItsURLs() {
        XCTAssertEqual(StoreLocation("/var/lib/fingerauthd/authd.db"), .sqlite(path: "/var/lib/fingerauthd/authd.db"))
        XCTAssertEqual(StoreLocation("postgresql://fa@db/authd"), .postgres(url: "postgresql://fa@db/authd"))
        XCTAssertEqual(StoreLocation("postgres://db/authd"), .postgres(url: "postgres://db/authd"))
        XCTAssertEqual(StoreLocation("./postgresql://x"), .sqlite(path: "./postgresql://x"))
    }

    func testRedactedURLNamesTheUserAndHostButNeverThePassword() {
        XCTAssertEqual(StoreLocation("postgresql://fa:s3cret@db.example:5432/authd").redacted,
                       "postgresql://fa:***@db.example:5432/authd")
        XCTAssertEqual(StoreLocation("postgresql://fa@db/authd?password=s3cret&sslmode=require").redacted,
                       "postgresql://fa@db/authd")
        XCTAssertEqual(StoreLocation("postgres://a:b:c@h/d").redacted, "postgres://a:***@h/d")
        XCTAssertEqual(StoreLocation("postgresql://db/authd").redacted, "postgresql://db/authd")
        XCTAssertEqual(StoreLocation("/srv/authd.db").redacted, "/srv/authd.db")
    }

    func testUnreachablePostgresIsAStoreErrorNamingNoPassword() {
        XCTAssertThrowsError(try StoreLocation("postgresql://fa:s3cret@127.0.0.1:1/x").open(connections: 1)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("cannot connect"), text)
            XCTAssertFalse(text.contains("s3cret"), text)
        }
    }

    func testPruneRemovesExpiredJtiAndOldAuditRowsInBatches() throws {
        let store = try AuthStore(path: temp.path)
        for i in 0..<2500 { XCTAssertTrue(try store.claimOnce(jti: "old\(i)", exp: 100, purgeBefore: 0)) }
        XCTAssertTrue(try store.claimOnce(jti: "fresh", exp: 10_000, purgeBefore: 0))
        for i in 0..<3 { try store.audit(AuditEvent(event: "login", outcome: "accept"), now: Int64(i)) }
        try store.audit(AuditEvent(event: "login", outcome: "accept"), now: 5000)
        let result = try store.prune(now: 5000, replayBefore: 1000, auditBefore: 10)
        XCTAssertEqual(result, PruneResult(replay: 2500, accessTokens: 0, audit: 3))
        XCTAssertFalse(try store.claimOnce(jti: "fresh", exp: 10_000, purgeBefore: 0))
        XCTAssertTrue(try store.claimOnce(jti: "old1", exp: 10_000, purgeBefore: 0))
        XCTAssertEqual(try store.auditEvents().count, 1)
        XCTAssertEqual(store.health(), .available)
        store.close()
        XCTAssertNotEqual(store.health(), .available)
    }

    func testPrunerRunsOnItsThreadAndStops() throws {
        let store = try AuthStore(path: temp.path)
        XCTAssertTrue(try store.claimOnce(jti: "old", exp: 1, purgeBefore: 0))
        let pruner = StorePruner(store: store, interval: 1, replaySlack: 0, auditRetention: nil)
        XCTAssertTrue(pruner.start())
        let deadline = Date().addingTimeInterval(5)
        var pruned = false
        while Date() < deadline {
            if try store.claimOnce(jti: "old", exp: 1, purgeBefore: 0) { pruned = true; break }
            usleep(100_000)
        }
        pruner.stop()
        XCTAssertTrue(pruned)
    }
}

import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthTransport
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
        XCTAssertEqual(
            StoreLocation("postgresql://fa:s3cret@db.example:5432/authd").redacted,
            "postgresql://fa:***@db.example:5432/authd")
        XCTAssertEqual(
            StoreLocation("postgresql://fa@db/authd?password=s3cret&sslmode=require").redacted,
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

    func testARemotePostgresNeedsAnExplicitSSLMode() {
        for url in [
            "postgresql://fa:s3cret@db.example/authd", "postgresql://fa@10.1.2.3:5432/authd",
            "postgresql://fa@127.0.0.1,db.example/authd", "postgresql:///authd?host=db.example",
        ] {
            XCTAssertThrowsError(try StoreLocation(url).open(connections: 1), url) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("sslmode=verify-full"), text)
                XCTAssertFalse(text.contains("s3cret"), text)
                XCTAssertFalse(text.contains("cannot connect"), "refused before connecting: \(text)")
            }
        }
        // Loopback, a socket, or an explicit mode (even a weaker one) go on to connect.
        for url in [
            "postgresql://fa@127.0.0.1:1/x", "postgresql://fa@[::1]:1/x", "postgresql://fa@%2Frun%2Fnone:1/x",
            "postgresql://fa@db.invalid:1/x?sslmode=require&connect_timeout=1",
        ] {
            XCTAssertThrowsError(try StoreLocation(url).open(connections: 1), url) { error in
                XCTAssertTrue("\(error)".contains("cannot connect"), "\(url): \(error)")
            }
        }
    }

    func testPruneRemovesExpiredJtiInBatches() throws {
        let store = try SQLiteStore(path: temp.path)
        let now = try store.databaseTime()
        var items: [WriteItem] = []
        for i in 0..<2500 { items.append(.claim(claim("old\(i)", keepUntil: now - 1))) }
        items.append(.claim(claim("fresh", keepUntil: now + 100)))
        XCTAssertEqual(
            try store.commit(items).filter { $0 == .refused(.keyChanged) }.count, 2501, "no such key: nothing claimed")
        try registerKey(store)
        XCTAssertTrue(try store.commit(items).allSatisfy { $0 == .accepted })
        XCTAssertEqual(try store.prune(PrunePolicy()), PruneResult(replay: 2501), "2500 old jti and the proof's")
        XCTAssertEqual(try store.commit([.claim(claim("fresh", keepUntil: now + 100))]), [.refused(.replayed)])
        XCTAssertEqual(try store.commit([.claim(claim("old1", keepUntil: now + 100))]), [.accepted])
    }

    func testPrunerRunsOnItsThreadAndStops() throws {
        let store = try SQLiteStore(path: temp.path)
        try registerKey(store)
        let now = try store.databaseTime()
        XCTAssertEqual(try store.commit([.claim(claim("old", keepUntil: now - 1))]), [.accepted])
        let pruner = StorePruner(store: store, interval: 1, policy: PrunePolicy())
        XCTAssertTrue(pruner.start())
        let deadline = Date().addingTimeInterval(5)
        var pruned = false
        while Date() < deadline {
            if try store.commit([.claim(claim("old", keepUntil: now - 1))]) == [.accepted] {
                pruned = true
                break
            }
            usleep(100_000)
        }
        pruner.stop()
        XCTAssertTrue(pruned)
    }

    func testAVersion2DatabaseMigratesAndGivesItsJtisTheFleetsWindow() throws {
        let sqlite = "/usr/bin/sqlite3"
        guard FileManager.default.isExecutableFile(atPath: sqlite) else { throw XCTSkip("no sqlite3 command") }
        let schema = """
            CREATE TABLE keys (kid TEXT PRIMARY KEY NOT NULL, user TEXT NOT NULL, host TEXT NOT NULL, jwk TEXT NOT NULL,
              status TEXT NOT NULL CHECK (status IN ('active', 'pending', 'revoked')), created INTEGER NOT NULL, revoked INTEGER);
            CREATE TABLE host_tokens (sha256 TEXT PRIMARY KEY NOT NULL, host TEXT NOT NULL, created INTEGER NOT NULL, revoked INTEGER);
            CREATE TABLE replay (jti TEXT PRIMARY KEY NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID;
            CREATE INDEX replay_exp ON replay (exp);
            CREATE TABLE access_tokens (sha256 TEXT PRIMARY KEY NOT NULL, user TEXT NOT NULL, host TEXT NOT NULL,
              kid TEXT NOT NULL, created INTEGER NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, event TEXT NOT NULL, user TEXT,
              host TEXT, kid TEXT, jti TEXT, outcome TEXT NOT NULL, reason TEXT, peer TEXT);
            INSERT INTO replay VALUES ('seen', 1000);
            INSERT INTO audit (time, event, user, outcome) VALUES (5, 'login', 'alice', 'accept');
            PRAGMA user_version = 2;
            """
        try runSQLite(sqlite, schema)
        let store = try SQLiteStore(path: temp.path)
        XCTAssertEqual(try store.auditEvents().map(\.verified), [true])
        XCTAssertEqual(try store.auditEvents().map(\.count), [1])
        try registerKey(store)
        XCTAssertEqual(try store.commit([.claim(claim("seen", keepUntil: 5000))]), [.refused(.replayed)])
        store.close()
        let check = Process()
        let out = Pipe()
        check.executableURL = URL(fileURLWithPath: sqlite)
        check.arguments = [temp.path, "SELECT keep_until FROM replay WHERE jti = 'seen'; PRAGMA user_version;"]
        check.standardOutput = out
        try check.run()
        check.waitUntilExit()
        XCTAssertEqual(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "1300\n15\n")
    }

    /// Version 9 rebuilds the rules table (SQLite cannot alter its CHECK for the new action):
    /// the rules stay, and the ids of rules removed before are still never given again.
    func testAVersion7DatabaseKeepsItsRulesAndNeverReusesARuleID() throws {
        let sqlite = "/usr/bin/sqlite3"
        guard FileManager.default.isExecutableFile(atPath: sqlite) else { throw XCTSkip("no sqlite3 command") }
        let schema = """
            CREATE TABLE keys (kid TEXT PRIMARY KEY NOT NULL, user TEXT NOT NULL, host TEXT NOT NULL, jwk TEXT NOT NULL,
              status TEXT NOT NULL, created INTEGER NOT NULL, revoked INTEGER, kind TEXT NOT NULL DEFAULT 'software');
            CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, event TEXT NOT NULL, user TEXT,
              host TEXT, kid TEXT, jti TEXT, outcome TEXT NOT NULL, reason TEXT, peer TEXT, claimed_user TEXT,
              verified INTEGER NOT NULL DEFAULT 1, count INTEGER NOT NULL DEFAULT 1, rule INTEGER, admin TEXT);
            CREATE INDEX audit_user ON audit (user, time);
            CREATE TABLE policy_rules (id INTEGER PRIMARY KEY AUTOINCREMENT, position INTEGER NOT NULL,
              stage TEXT NOT NULL CHECK (stage IN ('registration', 'login')), users TEXT NOT NULL, hosts TEXT NOT NULL,
              services TEXT NOT NULL, key_kind TEXT NOT NULL,
              action TEXT NOT NULL CHECK (action IN ('allow', 'deny', 'require-hardware-key')), created INTEGER NOT NULL);
            CREATE TABLE host_labels (host TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (host, label)) WITHOUT ROWID;
            CREATE TABLE user_lists (list TEXT NOT NULL, "user" TEXT NOT NULL, PRIMARY KEY (list, "user")) WITHOUT ROWID;
            CREATE TABLE attestation_challenges (id TEXT PRIMARY KEY NOT NULL, "user" TEXT NOT NULL, host TEXT NOT NULL,
              ak_public TEXT NOT NULL, secret_sha256 TEXT NOT NULL, nonce TEXT NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;
            INSERT INTO policy_rules VALUES (1, 1, 'login', '*', '*', 'sudo', '*', 'require-hardware-key', 1);
            INSERT INTO policy_rules VALUES (2, 2, 'login', 'bob', '*', '*', '*', 'deny', 1);
            UPDATE sqlite_sequence SET seq = 5 WHERE name = 'policy_rules';
            INSERT INTO attestation_challenges VALUES ('c', 'alice', 'h', 'x', 'y', 'z', 99999999999);
            PRAGMA user_version = 7;
            """
        try runSQLite(sqlite, schema)
        let store = try SQLiteStore(path: temp.path)
        defer { store.close() }
        XCTAssertEqual(
            try store.policyRules().map { "\($0.id) \($0.action.rawValue)" }, ["1 require-hardware-key", "2 deny"])
        let rule = PolicyRule(stage: .registration, users: ["*"], hosts: ["*"], action: .requireProvisionedEK)
        let added = try store.changePolicy(
            .addRule(rule, position: nil), audit: AuditEvent(event: .policyChange, outcome: .accept),
            now: 2)
        guard case let .changed(made?, _, _) = added else { return XCTFail("\(added)") }
        XCTAssertEqual(made.id, 6)
        // A challenge made before the EK was recorded is not answered.
        XCTAssertNil(try store.takeChallenge(id: "c", now: 3))
    }

    /// Version 14 adds the approvals, three audit columns and the policy's approve stage to a
    /// version 13 database, whose rows stay.
    func testAVersion13DatabaseGainsTheApprovalsAndKeepsItsRows() throws {
        let sqlite = "/usr/bin/sqlite3"
        guard FileManager.default.isExecutableFile(atPath: sqlite) else { throw XCTSkip("no sqlite3 command") }
        let made = try SQLiteStore(path: temp.path)
        try made.audit(AuditEvent(event: .login, user: "alice", outcome: .accept), now: 5)
        made.close()
        // Back to version 13 as that release left it.
        try runSQLite(
            sqlite,
            """
            DROP TABLE approvals;
            ALTER TABLE audit DROP COLUMN approval;
            ALTER TABLE audit DROP COLUMN client_address;
            ALTER TABLE audit DROP COLUMN workstation;
            PRAGMA user_version = 13;
            """)
        let store = try SQLiteStore(path: temp.path)
        defer { store.close() }
        XCTAssertEqual(try store.auditEvents().map(\.user), ["alice"])
        let approval = ApprovalRecord(
            id: "a1", code: "47", user: "alice", host: "web01", hostKid: "hk", service: "sudo",
            clientAddress: "10.0.0.5", terminal: "pts/1", nonce: "n", created: 10, expires: 40)
        var row = AuditEvent(event: .approvalRequest, user: "alice", host: "web01", outcome: .accept)
        row.approval = "a1"
        row.clientAddress = "10.0.0.5"
        XCTAssertEqual(
            try store.openApproval(approval, jti: "j", keepUntil: 100, muteSeconds: 0, audit: row, now: 10),
            .opened(replaced: nil))
        XCTAssertEqual(try store.approval(id: "a1"), approval)
        XCTAssertEqual(try store.auditEvents().map(\.approval), [nil, "a1"])
        let check = Process()
        let out = Pipe()
        check.executableURL = URL(fileURLWithPath: sqlite)
        check.arguments = [temp.path, "PRAGMA user_version;"]
        check.standardOutput = out
        try check.run()
        check.waitUntilExit()
        XCTAssertEqual(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "15\n")
    }

    /// Runs `script` on the test's database file with the sqlite3 command.
    func runSQLite(_ sqlite: String, _ script: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: sqlite)
        process.arguments = [temp.path, script]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
    }

    func registerKey(_ store: SQLiteStore) throws {
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        _ = try store.register(
            RegisteredKey(kid: "k", user: "alice", host: "h", jwk: maker.jwk, status: .active, created: 1),
            proofJTI: "proof", keepUntil: 1, audit: AuditEvent(event: .register, outcome: .deny), now: 1)
    }

    func claim(_ jti: String, keepUntil: Int64) -> TokenClaim {
        TokenClaim(
            kid: "k", user: "alice", host: "h", jti: jti, keepUntil: keepUntil, allowed: [.active],
            audit: AuditEvent(event: .login, outcome: .deny), time: 1)
    }
}

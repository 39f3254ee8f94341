import FingerAuthCore
import FingerAuthDomain
import FingerAuthSystem

/// The registry (`AuthStorage`) in one SQLite database: the embedded default.
///
/// One writer connection behind a mutex takes every write — the request path's batches
/// (`commit`) and the admin commands' changes — in WAL mode with `synchronous = FULL`, so a
/// commit returns only once the write-ahead log is on disk. Reads (key lookups, host
/// tokens, audit queries) use a small pool of read-only connections that WAL lets run
/// beside the writer. Statements are prepared once per connection; every value is a bound
/// parameter.
public final class SQLiteStore: AuthStorage, @unchecked Sendable {
    let writeLock = Lock()
    let writer: SQLiteDatabase
    let readers: ConnectionPool<SQLiteDatabase>
    let path: String

    /// Opens (creating if needed) the database at `path`, brings its schema up to date, and
    /// keeps up to `readers` read-only connections for lookups.
    public init(path: String, readers: Int = 4) throws(StoreError) {
        self.path = path
        writer = try SQLiteDatabase(path: path)
        try writer.execute("PRAGMA busy_timeout = 5000")
        try writer.execute("PRAGMA foreign_keys = ON")
        try writer.execute("PRAGMA journal_mode = WAL")
        try writer.execute("PRAGMA synchronous = FULL")
        try SQLiteSchema.migrate(writer)
        self.readers = ConnectionPool(name: "sqlite", capacity: readers) { () throws(StoreError) -> SQLiteDatabase in
            let db = try SQLiteDatabase(path: path, readOnly: true)
            try db.execute("PRAGMA busy_timeout = 5000")
            return db
        }
    }

    /// Closes every connection; later calls throw.
    public func close() {
        readers.close()
        writeLock.withLock { writer.close() }
    }

    /// Available while the file is open and readable (`SELECT 1`).
    public func health() -> StoreHealth {
        do throws(StoreError) {
            try read { (db) throws(StoreError) in
                try db.withStatement("SELECT 1") { (stmt) throws(StoreError) in _ = try stmt.step() }
            }
            return .available
        } catch {
            return .unavailable(error.message)
        }
    }

    /// `sqlite <journal mode> synchronous=<level>`, read back from the writer connection.
    public func durability() throws(StoreError) -> String {
        try writeLock.withLock { () throws(StoreError) -> String in
            let mode = try writer.prepare("PRAGMA journal_mode")
            let journal = try mode.step() ? (mode.text(0) ?? "?") : "?"
            let level = try writer.integer("PRAGMA synchronous") ?? -1
            let names: [Int64: String] = [0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"]
            return "sqlite \(journal.uppercased()) synchronous=\(names[level] ?? String(level))"
        }
    }

    /// This machine's clock as SQLite reads it (the database lives here).
    public func databaseTime() throws(StoreError) -> Int64 {
        try read { (db) throws(StoreError) -> Int64 in
            try db.withStatement(Self.nowSQL) { (stmt) throws(StoreError) -> Int64 in
                guard try stmt.step(), let now = stmt.int64(0) else { throw StoreError("no time from sqlite") }
                return now
            }
        }
    }

    /// SQL for the database's time in whole seconds.
    static let nowSQL = "SELECT CAST(strftime('%s', 'now') AS INTEGER)"

    /// Runs `body` on a pooled read-only connection.
    func read<T>(_ body: (SQLiteDatabase) throws(StoreError) -> T) throws(StoreError) -> T {
        try readers.withConnection(body)
    }

    /// Runs `body` in one write transaction on the writer connection.
    func write<T>(_ body: (SQLiteDatabase) throws(StoreError) -> T) throws(StoreError) -> T {
        try writeLock.withLock { () throws(StoreError) -> T in
            try writer.transaction { () throws(StoreError) -> T in try body(writer) }
        }
    }

    // MARK: - Keys

    static let keyColumns = "SELECT kid, user, host, jwk, status, created, kind, ek_sha256 FROM keys"

    /// The key stored under `kid`, in any status.
    public func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? {
        try read { (db) throws(StoreError) -> RegisteredKey? in try Self.key(db, kid: kid) }
    }

    static func key(_ db: SQLiteDatabase, kid: String) throws(StoreError) -> RegisteredKey? {
        try db.withStatement(keyColumns + " WHERE kid = ?1") { (stmt) throws(StoreError) -> RegisteredKey? in
            try stmt.bind(1, kid)
            return try stmt.step() ? try key(from: stmt) : nil
        }
    }

    static func key(from stmt: SQLiteStatement) throws(StoreError) -> RegisteredKey {
        guard let kid = stmt.text(0), let user = stmt.text(1), let host = stmt.text(2),
              let jwkText = stmt.text(3), let statusText = stmt.text(4),
              let status = KeyStatus(rawValue: statusText),
              let json = try? JSONParser(maxBytes: 16 * 1024, maxDepth: 4).parse(jwkText),
              let jwk = JWK(json: json), let kind = stmt.text(6).flatMap(KeyOrigin.init(rawValue:)) else {
            throw StoreError("corrupt row in table keys")
        }
        return RegisteredKey(kid: kid, user: user, host: host, jwk: jwk, status: status, created: stmt.int64(5) ?? 0,
                             kind: kind, ek: stmt.text(7))
    }

    /// Every registered key, oldest first.
    public func listKeys() throws(StoreError) -> [RegisteredKey] {
        try read { (db) throws(StoreError) -> [RegisteredKey] in
            try db.withStatement(Self.keyColumns + " ORDER BY created, kid") { (stmt) throws(StoreError) -> [RegisteredKey] in
                var keys: [RegisteredKey] = []
                while try stmt.step() { keys.append(try Self.key(from: stmt)) }
                return keys
            }
        }
    }

    /// One page of keys as the console lists them: pending first, then newest first.
    public func keysPage(_ page: Paging) throws(StoreError) -> [RegisteredKey] {
        try read { (db) throws(StoreError) -> [RegisteredKey] in
            try db.withStatement(Self.keyColumns + """
                 ORDER BY CASE WHEN status = 'pending' THEN 0 ELSE 1 END, created DESC, kid LIMIT ?1 OFFSET ?2
                """) { (stmt) throws(StoreError) -> [RegisteredKey] in
                try stmt.bind(1, Int64(page.limit))
                try stmt.bind(2, Int64(page.offset))
                var keys: [RegisteredKey] = []
                while try stmt.step() { keys.append(try Self.key(from: stmt)) }
                return keys
            }
        }
    }

    /// Registers `key` as `Registration` describes, in one transaction with its audit rows.
    public func register(_ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, keyLimit: Int,
                         now: Int64) throws(StoreError) -> RegistrationResult {
        try write { (db) throws(StoreError) -> RegistrationResult in
            let steps = RegistrationTransaction.Steps(
                existing: { () throws(StoreError) -> RegisteredKey? in try Self.key(db, kid: key.kid) },
                claim: { () throws(StoreError) -> Bool in try Self.claimJTI(db, proofJTI, keepUntil: keepUntil) },
                insert: { () throws(StoreError) -> RegisteredKey? in
                    try Self.insertKey(db, key)
                    return db.changes == 1 ? nil : try Self.key(db, kid: key.kid)
                },
                audit: { (row) throws(StoreError) in try Self.insertAudit(db, row, time: now) })
            return try RegistrationTransaction.run(db, key, audit: audit, keyLimit: keyLimit, now: now, steps)
        }
    }

    private static func insertKey(_ db: SQLiteDatabase, _ key: RegisteredKey) throws(StoreError) {
        try db.withStatement("""
            INSERT INTO keys (kid, user, host, jwk, status, created, kind, ek_sha256) VALUES (?1, ?2, ?3, ?4, ?6, ?5, ?7, ?8)
            ON CONFLICT (kid) DO NOTHING
            """) { (insert) throws(StoreError) in
            try insert.bind(1, key.kid)
            try insert.bind(2, key.user)
            try insert.bind(3, key.host)
            try insert.bind(4, JSONEncoding.encode(key.jwk.json))
            try insert.bind(5, key.created)
            try insert.bind(6, key.status == .pending ? "pending" : "active")
            try insert.bind(7, key.kind.rawValue)
            try insert.bind(8, key.ek)
            try insert.run()
        }
    }

    /// Marks an active or pending key revoked (it stays, so the kid can never be registered again).
    public func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult {
        try write { (db) throws(StoreError) -> RevocationResult in
            guard let existing = try Self.key(db, kid: kid) else { return .unknown }
            guard existing.status != .revoked else { return .alreadyRevoked }
            try Self.markRevoked(db, kid: kid, now: now)
            return .revoked
        }
    }

    /// Revokes every active or pending key of `user` and/or `host`.
    public func revokeKeys(user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey] {
        guard user != nil || host != nil else { return [] }
        return try write { (db) throws(StoreError) -> [RegisteredKey] in try Self.revokeKeysLocked(db, user: user, host: host, now: now) }
    }

    static func revokeKeysLocked(_ db: SQLiteDatabase, user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey] {
        let keys = try db.withStatement(keyColumns + """
             WHERE status <> 'revoked' AND (?1 IS NULL OR user = ?1) AND (?2 IS NULL OR host = ?2) ORDER BY created, kid
            """) { (stmt) throws(StoreError) -> [RegisteredKey] in
            try stmt.bind(1, user)
            try stmt.bind(2, host)
            var found: [RegisteredKey] = []
            while try stmt.step() { found.append(try Self.key(from: stmt)) }
            return found
        }
        for found in keys { try markRevoked(db, kid: found.kid, now: now) }
        return keys
    }

    static func markRevoked(_ db: SQLiteDatabase, kid: String, now: Int64) throws(StoreError) {
        try db.withStatement("UPDATE keys SET status = 'revoked', revoked = ?2 WHERE kid = ?1 AND status <> 'revoked'") {
            (update) throws(StoreError) in
            try update.bind(1, kid)
            try update.bind(2, now)
            try update.run()
        }
    }

    /// Turns a pending key active (`approval = manual`); a revoked key stays revoked.
    public func approve(kid: String) throws(StoreError) -> ApprovalResult {
        try write { (db) throws(StoreError) -> ApprovalResult in
            guard let existing = try Self.key(db, kid: kid) else { return .unknown }
            switch existing.status {
            case .active: return .alreadyActive
            case .revoked: return .revoked
            case .pending:
                try db.withStatement("UPDATE keys SET status = 'active' WHERE kid = ?1 AND status = 'pending'") {
                    (update) throws(StoreError) in
                    try update.bind(1, kid)
                    try update.run()
                }
                return .approved
            }
        }
    }

    /// How many keys are in each status (for /metrics); every status is present.
    public func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)] {
        try read { (db) throws(StoreError) -> [(KeyStatus, Int64)] in
            try db.withStatement("SELECT status, count(*) FROM keys GROUP BY status") {
                (stmt) throws(StoreError) -> [(KeyStatus, Int64)] in
                var counts: [KeyStatus: Int64] = [:]
                while try stmt.step() {
                    if let status = stmt.text(0).flatMap(KeyStatus.init(rawValue:)) { counts[status] = stmt.int64(1) ?? 0 }
                }
                return KeyStatus.allCases.map { ($0, counts[$0] ?? 0) }
            }
        }
    }

    // MARK: - Rate limits

    /// SQLite counts failures in each process's memory (one instance per file).
    public var sharesFailureCounts: Bool { false }

    public func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? { nil }
}

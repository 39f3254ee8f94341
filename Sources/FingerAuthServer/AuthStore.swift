import FingerAuthCore

/// What registering a key did.
public enum RegistrationResult: Sendable, Equatable {
    /// A new key, now active (201).
    case created
    /// The same key for the same user and host was already active (200).
    case alreadyRegistered
    /// The kid belongs to another user or host (409).
    case conflict
    /// The key was revoked; only an admin could bring it back (409).
    case revoked
}

/// What revoking a key did.
public enum RevocationResult: Sendable, Equatable {
    case revoked
    case alreadyRevoked
    case unknown
}

/// The registry (`AuthStorage`) in one SQLite database (WAL, busy timeout, foreign keys):
/// the embedded default. One connection behind a mutex; every value is a bound parameter
/// of a prepared statement.
public final class AuthStore: AuthStorage, @unchecked Sendable {
    let lock = Lock()
    let database: SQLiteDatabase


    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    public init(path: String) throws(StoreError) {
        database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA busy_timeout = 5000")
        try database.execute("PRAGMA foreign_keys = ON")
        try database.execute("PRAGMA journal_mode = WAL")
        try AuthSchema.migrate(database)
    }

    /// Closes the connection (sqlite3_close_v2); later calls throw.
    public func close() {
        lock.withLock { database.close() }
    }

    /// Available while the file is open and readable (`SELECT 1`).
    public func health() -> StoreHealth {
        lock.withLock { () -> StoreHealth in
            do throws(StoreError) {
                let stmt = try database.prepare("SELECT 1")
                _ = try stmt.step()
                return .available
            } catch {
                return .unavailable(error.message)
            }
        }
    }

    /// Deletes expired replay rows and access tokens and (with `auditBefore`) old audit
    /// rows, at most `batch` rows per statement, taking the connection between batches
    /// so that a login waits for one batch at most.
    public func prune(now: Int64, replayBefore: Int64, auditBefore: Int64?) throws(StoreError) -> PruneResult {
        var result = PruneResult()
        result.replay = try deleteInBatches(
            "DELETE FROM replay WHERE jti IN (SELECT jti FROM replay WHERE exp < ?1 LIMIT \(Self.pruneBatch))", replayBefore)
        result.accessTokens = try deleteInBatches(
            "DELETE FROM access_tokens WHERE sha256 IN (SELECT sha256 FROM access_tokens WHERE expires < ?1 LIMIT \(Self.pruneBatch))", now)
        if let auditBefore {
            result.audit = try deleteInBatches(
                "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE time < ?1 ORDER BY id LIMIT \(Self.pruneBatch))", auditBefore)
        }
        return result
    }

    /// Rows one pruning statement deletes at most.
    static let pruneBatch = 1000

    private func deleteInBatches(_ sql: String, _ before: Int64) throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try lock.withLock { () throws(StoreError) -> Int in
                let stmt = try database.prepare(sql)
                try stmt.bind(1, before)
                try stmt.run()
                return database.changes
            }
            total += deleted
            if deleted < Self.pruneBatch { return total }
        }
    }

    // MARK: - Keys

    /// The key stored under `kid`, in any status.
    public func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? {
        try lock.withLock { () throws(StoreError) -> RegisteredKey? in try lockedKey(kid: kid) }
    }

    private func lockedKey(kid: String) throws(StoreError) -> RegisteredKey? {
        let stmt = try database.prepare("SELECT kid, user, host, jwk, status, created FROM keys WHERE kid = ?1")
        try stmt.bind(1, kid)
        guard try stmt.step() else { return nil }
        return try Self.key(from: stmt)
    }

    private static func key(from stmt: SQLiteStatement) throws(StoreError) -> RegisteredKey {
        guard let kid = stmt.text(0), let user = stmt.text(1), let host = stmt.text(2),
              let jwkText = stmt.text(3), let statusText = stmt.text(4),
              let status = KeyStatus(rawValue: statusText),
              let json = try? JSONParser(maxBytes: 16 * 1024, maxDepth: 4).parse(jwkText),
              let jwk = JWK(json: json) else {
            throw StoreError("corrupt row in table keys")
        }
        return RegisteredKey(kid: kid, user: user, host: host, jwk: jwk, status: status, created: stmt.int64(5) ?? 0)
    }

    /// Every registered key, oldest first.
    public func listKeys() throws(StoreError) -> [RegisteredKey] {
        try lock.withLock { () throws(StoreError) -> [RegisteredKey] in
            let stmt = try database.prepare(
                "SELECT kid, user, host, jwk, status, created FROM keys ORDER BY created, kid")
            var keys: [RegisteredKey] = []
            while try stmt.step() { keys.append(try Self.key(from: stmt)) }
            return keys
        }
    }

    /// Registers `key` (status active, or pending when `key.status` says so) unless its kid
    /// is taken. `.alreadyRegistered` covers an active or pending key of the same user and host.
    public func register(_ key: RegisteredKey) throws(StoreError) -> RegistrationResult {
        try lock.withLock { () throws(StoreError) -> RegistrationResult in
            let insert = try database.prepare("""
                INSERT INTO keys (kid, user, host, jwk, status, created) VALUES (?1, ?2, ?3, ?4, ?6, ?5)
                ON CONFLICT (kid) DO NOTHING
                """)
            try insert.bind(1, key.kid)
            try insert.bind(2, key.user)
            try insert.bind(3, key.host)
            try insert.bind(4, JSONEncoding.encode(key.jwk.json))
            try insert.bind(5, key.created)
            try insert.bind(6, key.status == .pending ? "pending" : "active")
            try insert.run()
            if database.changes == 1 { return .created }
            guard let existing = try lockedKey(kid: key.kid) else { throw StoreError("key vanished during registration") }
            guard existing.user == key.user, existing.host == key.host else { return .conflict }
            return existing.status == .revoked ? .revoked : .alreadyRegistered
        }
    }

    /// Marks an active or pending key revoked (it stays, so the kid can never be registered again).
    public func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult {
        try lock.withLock { () throws(StoreError) -> RevocationResult in
            guard let existing = try lockedKey(kid: kid) else { return .unknown }
            guard existing.status != .revoked else { return .alreadyRevoked }
            let update = try database.prepare("UPDATE keys SET status = 'revoked', revoked = ?2 WHERE kid = ?1")
            try update.bind(1, kid)
            try update.bind(2, now)
            try update.run()
            return .revoked
        }
    }

    /// Turns a pending key active (`approval = manual`); a revoked key stays revoked.
    public func approve(kid: String) throws(StoreError) -> ApprovalResult {
        try lock.withLock { () throws(StoreError) -> ApprovalResult in
            guard let existing = try lockedKey(kid: kid) else { return .unknown }
            switch existing.status {
            case .active: return .alreadyActive
            case .revoked: return .revoked
            case .pending:
                let update = try database.prepare("UPDATE keys SET status = 'active' WHERE kid = ?1 AND status = 'pending'")
                try update.bind(1, kid)
                try update.run()
                return .approved
            }
        }
    }

    /// How many keys are in each status (for /metrics); every status is present.
    public func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)] {
        try lock.withLock { () throws(StoreError) -> [(KeyStatus, Int64)] in
            let stmt = try database.prepare("SELECT status, count(*) FROM keys GROUP BY status")
            var counts: [KeyStatus: Int64] = [:]
            while try stmt.step() {
                if let status = stmt.text(0).flatMap(KeyStatus.init(rawValue:)) { counts[status] = stmt.int64(1) ?? 0 }
            }
            return KeyStatus.allCases.map { ($0, counts[$0] ?? 0) }
        }
    }

    // MARK: - Replay

    /// INSERT of `jti` into the replay table (primary key): false when it is already there.
    public func claimOnce(jti: String, exp: Int64, purgeBefore: Int64) throws(StoreError) -> Bool {
        try lock.withLock { () throws(StoreError) -> Bool in
            let purge = try database.prepare("DELETE FROM replay WHERE exp < ?1")
            try purge.bind(1, purgeBefore)
            try purge.run()
            let insert = try database.prepare("INSERT INTO replay (jti, exp) VALUES (?1, ?2) ON CONFLICT (jti) DO NOTHING")
            try insert.bind(1, jti)
            try insert.bind(2, exp)
            try insert.run()
            return database.changes == 1
        }
    }
}

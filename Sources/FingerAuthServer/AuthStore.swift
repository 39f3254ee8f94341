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

/// The registry: keys, host enrollment tokens, the replay table and the audit log, in one
/// SQLite database (WAL, busy timeout, foreign keys). One connection behind a mutex; every
/// value is a bound parameter of a prepared statement.
public final class AuthStore: KeyDirectory, ReplayGuard, @unchecked Sendable {
    private let lock = Lock()
    private let database: SQLiteDatabase

    /// Schema version kept in `PRAGMA user_version`.
    static let schemaVersion = 1

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    public init(path: String) throws(StoreError) {
        database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA busy_timeout = 5000")
        try database.execute("PRAGMA foreign_keys = ON")
        try database.execute("PRAGMA journal_mode = WAL")
        try migrate()
    }

    /// Closes the connection (sqlite3_close_v2); later calls throw.
    public func close() {
        lock.withLock { database.close() }
    }

    private func migrate() throws(StoreError) {
        let version = try database.prepare("PRAGMA user_version")
        let current = try version.step() ? (version.int64(0) ?? 0) : 0
        guard current <= Int64(Self.schemaVersion) else {
            throw StoreError("database schema \(current) is newer than this fingerauthd (\(Self.schemaVersion))")
        }
        try database.execute("""
            BEGIN IMMEDIATE;
            CREATE TABLE IF NOT EXISTS keys (
                kid TEXT PRIMARY KEY NOT NULL,
                user TEXT NOT NULL,
                host TEXT NOT NULL,
                jwk TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
                created INTEGER NOT NULL,
                revoked INTEGER
            );
            CREATE INDEX IF NOT EXISTS keys_user ON keys (user);
            CREATE TABLE IF NOT EXISTS host_tokens (
                sha256 TEXT PRIMARY KEY NOT NULL,
                host TEXT NOT NULL,
                created INTEGER NOT NULL,
                revoked INTEGER
            );
            CREATE TABLE IF NOT EXISTS replay (
                jti TEXT PRIMARY KEY NOT NULL,
                exp INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS replay_exp ON replay (exp);
            CREATE TABLE IF NOT EXISTS audit (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                time INTEGER NOT NULL,
                event TEXT NOT NULL,
                user TEXT,
                host TEXT,
                kid TEXT,
                jti TEXT,
                outcome TEXT NOT NULL,
                reason TEXT,
                peer TEXT
            );
            PRAGMA user_version = \(Self.schemaVersion);
            COMMIT;
            """)
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

    /// Registers `key` (status active) unless its kid is taken.
    public func register(_ key: RegisteredKey) throws(StoreError) -> RegistrationResult {
        try lock.withLock { () throws(StoreError) -> RegistrationResult in
            let insert = try database.prepare("""
                INSERT INTO keys (kid, user, host, jwk, status, created) VALUES (?1, ?2, ?3, ?4, 'active', ?5)
                ON CONFLICT (kid) DO NOTHING
                """)
            try insert.bind(1, key.kid)
            try insert.bind(2, key.user)
            try insert.bind(3, key.host)
            try insert.bind(4, JSONEncoding.encode(key.jwk.json))
            try insert.bind(5, key.created)
            try insert.run()
            if database.changes == 1 { return .created }
            guard let existing = try lockedKey(kid: key.kid) else { throw StoreError("key vanished during registration") }
            guard existing.user == key.user, existing.host == key.host else { return .conflict }
            return existing.status == .active ? .alreadyRegistered : .revoked
        }
    }

    /// Marks the key revoked (it stays, so the kid can never be registered again).
    public func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult {
        try lock.withLock { () throws(StoreError) -> RevocationResult in
            guard let existing = try lockedKey(kid: kid) else { return .unknown }
            guard existing.status == .active else { return .alreadyRevoked }
            let update = try database.prepare("UPDATE keys SET status = 'revoked', revoked = ?2 WHERE kid = ?1")
            try update.bind(1, kid)
            try update.bind(2, now)
            try update.run()
            return .revoked
        }
    }

    // MARK: - Host tokens

    /// Stores the hash of a new token for `host` and returns the token (shown once).
    public func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        guard let token = HostToken.generate(), let digest = HostToken.hash(token) else {
            throw StoreError("no random bytes for a token")
        }
        try lock.withLock { () throws(StoreError) in
            let insert = try database.prepare("INSERT INTO host_tokens (sha256, host, created) VALUES (?1, ?2, ?3)")
            try insert.bind(1, digest)
            try insert.bind(2, host)
            try insert.bind(3, now)
            try insert.run()
        }
        return token
    }

    /// The host a presented token enrolls for, or nil (unknown, revoked or malformed).
    public func host(forToken token: String) throws(StoreError) -> String? {
        guard let digest = HostToken.hash(token) else { return nil }
        return try lock.withLock { () throws(StoreError) -> String? in
            let stmt = try database.prepare("SELECT host FROM host_tokens WHERE sha256 = ?1 AND revoked IS NULL")
            try stmt.bind(1, digest)
            return try stmt.step() ? stmt.text(0) : nil
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

    // MARK: - Audit

    /// Appends one audit row at time `now`. Callers answer only after this returned.
    public func audit(_ event: AuditEvent, now: Int64) throws(StoreError) {
        try lock.withLock { () throws(StoreError) in
            let insert = try database.prepare("""
                INSERT INTO audit (time, event, user, host, kid, jti, outcome, reason, peer)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """)
            try insert.bind(1, now)
            try insert.bind(2, event.event)
            try insert.bind(3, event.user)
            try insert.bind(4, event.host)
            try insert.bind(5, event.kid)
            try insert.bind(6, event.jti)
            try insert.bind(7, event.outcome)
            try insert.bind(8, event.reason)
            try insert.bind(9, event.peer)
            try insert.run()
        }
    }

    /// The last `limit` audit rows, oldest first (for `fingerauthd` tests and tooling).
    public func auditEvents(limit: Int = 100) throws(StoreError) -> [AuditEvent] {
        try lock.withLock { () throws(StoreError) -> [AuditEvent] in
            let stmt = try database.prepare("""
                SELECT event, user, host, kid, jti, outcome, reason, peer FROM
                (SELECT * FROM audit ORDER BY id DESC LIMIT ?1) ORDER BY id
                """)
            try stmt.bind(1, Int64(limit))
            var events: [AuditEvent] = []
            while try stmt.step() {
                events.append(AuditEvent(event: stmt.text(0) ?? "", user: stmt.text(1), host: stmt.text(2),
                                         kid: stmt.text(3), jti: stmt.text(4), outcome: stmt.text(5) ?? "",
                                         reason: stmt.text(6), peer: stmt.text(7)))
            }
            return events
        }
    }
}

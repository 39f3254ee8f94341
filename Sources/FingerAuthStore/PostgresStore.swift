import FingerAuthCore
import FingerAuthDomain

/// The registry (`AuthStorage`) in one PostgreSQL database that several fingerauthd
/// instances share: a bounded pool of libpq connections, prepared statements with every
/// value a parameter, a statement timeout and synchronous commit on every session. The
/// request path's batches run as one pipeline each (`commit`): one round trip and one
/// durable commit for all the logins in it; the jti claim is one atomic statement, so two
/// instances can never both accept one token. Every failure throws; the service answers
/// 503 then, never 2xx.
public final class PostgresStore: AuthStorage, @unchecked Sendable {
    let pool: ConnectionPool<PostgresConnection>

    /// Connects to `url` (refused when it reaches another machine without an explicit
    /// `sslmode`), creates or migrates the schema (`PostgresSchema`), and keeps up to
    /// `connections` connections open; every statement is cut off after `statementTimeout`
    /// milliseconds.
    public init(url: String, connections: Int, statementTimeout: Int = 5000) throws(StoreError) {
        if let problem = PostgresURL.transportProblem(url) { throw StoreError(problem) }
        pool = ConnectionPool(name: "postgresql", capacity: connections) { () throws(StoreError) -> PostgresConnection in
            try PostgresConnection(url: url, statementTimeoutMilliseconds: statementTimeout)
        } usable: { $0.isUsable }
        try pool.withConnection { (connection) throws(StoreError) in try PostgresSchema.migrate(connection) }
    }

    public func close() { pool.close() }

    /// Available when a pooled connection answers `SELECT 1`.
    public func health() -> StoreHealth {
        do throws(StoreError) {
            try pool.withConnection { (db) throws(StoreError) in _ = try db.query("SELECT 1") }
            return .available
        } catch {
            return .unavailable(error.message)
        }
    }

    /// `postgresql synchronous_commit=on fsync=on`, as the server reports them.
    public func durability() throws(StoreError) -> String {
        try pool.withConnection { (db) throws(StoreError) -> String in
            let result = try db.query("SELECT current_setting('synchronous_commit'), current_setting('fsync')")
            return "postgresql synchronous_commit=\(result.text(0, 0) ?? "?") fsync=\(result.text(0, 1) ?? "?")"
        }
    }

    public func databaseTime() throws(StoreError) -> Int64 {
        try pool.withConnection { (db) throws(StoreError) -> Int64 in
            guard let now = try db.query("SELECT extract(epoch FROM clock_timestamp())::bigint").int64(0, 0) else {
                throw StoreError("postgresql: no time")
            }
            return now
        }
    }

    // MARK: - Keys

    static let keyColumns = #"SELECT kid, "user", host, jwk, status, created, kind, ek_sha256 FROM keys"#

    public func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? {
        try pool.withConnection { (db) throws(StoreError) -> RegisteredKey? in try Self.key(db, kid) }
    }

    static func key(_ db: PostgresConnection, _ kid: String, lock: Bool = false) throws(StoreError) -> RegisteredKey? {
        let result = try db.query(keyColumns + " WHERE kid = $1" + (lock ? " FOR UPDATE" : ""), [.text(kid)])
        return result.rows == 0 ? nil : try key(result, 0)
    }

    static func key(_ result: PostgresResult, _ row: Int) throws(StoreError) -> RegisteredKey {
        guard let kid = result.text(row, 0), let user = result.text(row, 1), let host = result.text(row, 2),
              let jwkText = result.text(row, 3), let statusText = result.text(row, 4),
              let status = KeyStatus(rawValue: statusText),
              let json = try? JSONParser(maxBytes: 16 * 1024, maxDepth: 4).parse(jwkText),
              let jwk = JWK(json: json), let kind = result.text(row, 6).flatMap(KeyOrigin.init(rawValue:)) else {
            throw StoreError("corrupt row in table keys")
        }
        return RegisteredKey(kid: kid, user: user, host: host, jwk: jwk, status: status,
                             created: result.int64(row, 5) ?? 0, kind: kind, ek: result.text(row, 7))
    }

    public func listKeys() throws(StoreError) -> [RegisteredKey] {
        try pool.withConnection { (db) throws(StoreError) -> [RegisteredKey] in
            let result = try db.query(Self.keyColumns + " ORDER BY created, kid")
            var keys: [RegisteredKey] = []
            for row in 0..<result.rows { keys.append(try Self.key(result, row)) }
            return keys
        }
    }

    /// One page of keys as the console lists them: pending first, then newest first.
    public func keysPage(_ page: Paging) throws(StoreError) -> [RegisteredKey] {
        try pool.withConnection { (db) throws(StoreError) -> [RegisteredKey] in
            let result = try db.query(Self.keyColumns + """
                 ORDER BY CASE WHEN status = 'pending' THEN 0 ELSE 1 END, created DESC, kid LIMIT $1 OFFSET $2
                """, [.integer(Int64(page.limit)), .integer(Int64(page.offset))])
            var keys: [RegisteredKey] = []
            for row in 0..<result.rows { keys.append(try Self.key(result, row)) }
            return keys
        }
    }

    /// One transaction on one connection; not repeated on a fresh connection when the
    /// server went away mid-way (it may have committed: the caller answers 503).
    func transaction<T>(_ body: (PostgresConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        try pool.withConnection(retry: false) { (db) throws(StoreError) -> T in
            try db.execute("BEGIN")
            do throws(StoreError) {
                let value = try body(db)
                try db.execute("COMMIT")
                return value
            } catch {
                _ = try? db.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The first key of the two-key advisory locks (`pg_advisory_xact_lock(class, hashtext(…))`)
    /// that serialise registrations of one user on one host, and EK pin changes of one host,
    /// across instances (the one-key lock of migrations is another space).
    static let keyLockClass = 0x4641_4B59

    /// Registers `key` as `Registration` describes, in one transaction; registrations of
    /// the same user on the same host wait for each other, so that two instances cannot both
    /// pass `keyLimit`.
    public func register(_ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, keyLimit: Int,
                         now: Int64) throws(StoreError) -> RegistrationResult {
        try transaction { (db) throws(StoreError) -> RegistrationResult in
            _ = try db.query("SELECT pg_advisory_xact_lock(\(Self.keyLockClass), hashtext($1))",
                             [.text(key.user + "\n" + key.host)])
            let steps = RegistrationTransaction.Steps(
                existing: { () throws(StoreError) -> RegisteredKey? in try Self.key(db, key.kid) },
                claim: { () throws(StoreError) -> Bool in
                    try db.query("INSERT INTO replay (jti, keep_until) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING",
                                 [.text(proofJTI), .integer(keepUntil)]).affected == 1
                },
                insert: { () throws(StoreError) -> RegisteredKey? in
                    let insert = try db.query("""
                        INSERT INTO keys (kid, "user", host, jwk, status, created, kind, ek_sha256)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (kid) DO NOTHING
                        """, [.text(key.kid), .text(key.user), .text(key.host), .text(JSONEncoding.encode(key.jwk.json)),
                              .text(key.status == .pending ? "pending" : "active"), .integer(key.created),
                              .text(key.kind.rawValue), .text(key.ek)])
                    return insert.affected == 1 ? nil : try Self.key(db, key.kid)
                },
                audit: { (row) throws(StoreError) in try Self.insertAudit(db, row, time: now) })
            return try RegistrationTransaction.run(db, key, audit: audit, keyLimit: keyLimit, now: now, steps)
        }
    }

    public func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult {
        try transaction { (db) throws(StoreError) -> RevocationResult in
            let update = try db.query("UPDATE keys SET status = 'revoked', revoked = $2 WHERE kid = $1 AND status <> 'revoked'",
                                      [.text(kid), .integer(now)])
            if update.affected == 1 { return .revoked }
            return try Self.key(db, kid) == nil ? .unknown : .alreadyRevoked
        }
    }

    public func revokeKeys(user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey] {
        guard user != nil || host != nil else { return [] }
        return try transaction { (db) throws(StoreError) -> [RegisteredKey] in
            try Self.revokeKeysLocked(db, user: user, host: host, now: now)
        }
    }

    static func revokeKeysLocked(_ db: PostgresConnection, user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey] {
        let result = try db.query(#"""
            UPDATE keys SET status = 'revoked', revoked = $3
            WHERE status <> 'revoked' AND ($1::text IS NULL OR "user" = $1::text) AND ($2::text IS NULL OR host = $2::text)
            RETURNING kid, "user", host, jwk, status, created, kind, ek_sha256
            """#, [.text(user), .text(host), .integer(now)])
        var keys: [RegisteredKey] = []
        for row in 0..<result.rows { keys.append(try key(result, row)) }
        return keys.sorted { ($0.created, $0.kid) < ($1.created, $1.kid) }
    }

    public func approve(kid: String) throws(StoreError) -> ApprovalResult {
        try transaction { (db) throws(StoreError) -> ApprovalResult in
            let update = try db.query("UPDATE keys SET status = 'active' WHERE kid = $1 AND status = 'pending'", [.text(kid)])
            if update.affected == 1 { return .approved }
            switch try Self.key(db, kid)?.status {
            case nil: return .unknown
            case .revoked?: return .revoked
            case .active?, .pending?: return .alreadyActive
            }
        }
    }

    public func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)] {
        try pool.withConnection { (db) throws(StoreError) -> [(KeyStatus, Int64)] in
            let result = try db.query("SELECT status, count(*) FROM keys GROUP BY status")
            var counts: [KeyStatus: Int64] = [:]
            for row in 0..<result.rows {
                if let status = result.text(row, 0).flatMap(KeyStatus.init(rawValue:)) { counts[status] = result.int64(row, 1) ?? 0 }
            }
            return KeyStatus.allCases.map { ($0, counts[$0] ?? 0) }
        }
    }

    // MARK: - Rate limits

    /// Every instance counts failures in `rate_counters`, so two instances on one database
    /// count one user's failures together.
    public var sharesFailureCounts: Bool { true }

    public func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? {
        try pool.withConnection { (db) throws(StoreError) -> FailureWindow? in
            let result = try db.query("SELECT count, expires FROM rate_counters WHERE key = $1 AND expires > $2",
                                      [.text(key), .integer(now)])
            guard result.rows > 0 else { return nil }
            guard let count = result.int64(0, 0), let end = result.int64(0, 1) else {
                throw StoreError("corrupt row in table rate_counters")
            }
            return FailureWindow(count: Int(count), end: end)
        }
    }
}

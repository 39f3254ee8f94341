import FingerAuthCore

/// The registry (`AuthStorage`) in one PostgreSQL database that several fingerauthd
/// instances share: a bounded pool of libpq connections, prepared statements with every
/// value a parameter, a statement timeout on every session, and one atomic statement for
/// the jti check (`INSERT … ON CONFLICT DO NOTHING` and its row count), so that two
/// instances can never both accept one token. Every failure throws; the service answers
/// 503 then, never 2xx.
public final class PostgresStore: AuthStorage, @unchecked Sendable {
    let pool: PostgresPool

    /// Connects to `url`, creates or migrates the schema (`PostgresSchema`), and keeps up
    /// to `connections` connections open; every statement is cut off after
    /// `statementTimeout` milliseconds.
    public init(url: String, connections: Int, statementTimeout: Int = 5000) throws(StoreError) {
        pool = PostgresPool(url: url, capacity: connections, statementTimeoutMilliseconds: statementTimeout)
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

    // MARK: - Keys

    private static let keyColumns = #"SELECT kid, "user", host, jwk, status, created FROM keys"#

    public func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? {
        try pool.withConnection { (db) throws(StoreError) -> RegisteredKey? in try Self.key(db, kid) }
    }

    private static func key(_ db: PostgresConnection, _ kid: String) throws(StoreError) -> RegisteredKey? {
        let result = try db.query(keyColumns + " WHERE kid = $1", [.text(kid)])
        return result.rows == 0 ? nil : try key(result, 0)
    }

    private static func key(_ result: PostgresResult, _ row: Int) throws(StoreError) -> RegisteredKey {
        guard let kid = result.text(row, 0), let user = result.text(row, 1), let host = result.text(row, 2),
              let jwkText = result.text(row, 3), let statusText = result.text(row, 4),
              let status = KeyStatus(rawValue: statusText),
              let json = try? JSONParser(maxBytes: 16 * 1024, maxDepth: 4).parse(jwkText),
              let jwk = JWK(json: json) else {
            throw StoreError("corrupt row in table keys")
        }
        return RegisteredKey(kid: kid, user: user, host: host, jwk: jwk, status: status,
                             created: result.int64(row, 5) ?? 0)
    }

    public func listKeys() throws(StoreError) -> [RegisteredKey] {
        try pool.withConnection { (db) throws(StoreError) -> [RegisteredKey] in
            let result = try db.query(Self.keyColumns + " ORDER BY created, kid")
            var keys: [RegisteredKey] = []
            for row in 0..<result.rows { keys.append(try Self.key(result, row)) }
            return keys
        }
    }

    public func register(_ key: RegisteredKey) throws(StoreError) -> RegistrationResult {
        try pool.withConnection { (db) throws(StoreError) -> RegistrationResult in
            let insert = try db.query("""
                INSERT INTO keys (kid, "user", host, jwk, status, created) VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (kid) DO NOTHING
                """, [.text(key.kid), .text(key.user), .text(key.host), .text(JSONEncoding.encode(key.jwk.json)),
                      .text(key.status == .pending ? "pending" : "active"), .integer(key.created)])
            if insert.affected == 1 { return .created }
            guard let existing = try Self.key(db, key.kid) else { throw StoreError("key vanished during registration") }
            guard existing.user == key.user, existing.host == key.host else { return .conflict }
            return existing.status == .revoked ? .revoked : .alreadyRegistered
        }
    }

    public func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult {
        try pool.withConnection { (db) throws(StoreError) -> RevocationResult in
            let update = try db.query("UPDATE keys SET status = 'revoked', revoked = $2 WHERE kid = $1 AND status <> 'revoked'",
                                      [.text(kid), .integer(now)])
            if update.affected == 1 { return .revoked }
            return try Self.key(db, kid) == nil ? .unknown : .alreadyRevoked
        }
    }

    public func approve(kid: String) throws(StoreError) -> ApprovalResult {
        try pool.withConnection { (db) throws(StoreError) -> ApprovalResult in
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

    // MARK: - Replay

    /// One statement: the insert wins for exactly one caller across every instance.
    /// Expired rows are removed by `prune`, not here, so a login costs one write.
    public func claimOnce(jti: String, exp: Int64, purgeBefore: Int64) throws(StoreError) -> Bool {
        try pool.withConnection { (db) throws(StoreError) -> Bool in
            try db.query("INSERT INTO replay (jti, exp) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING",
                         [.text(jti), .integer(exp)]).affected == 1
        }
    }

    // MARK: - Tokens

    public func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        guard let token = HostToken.generate(), let digest = HostToken.hash(token) else {
            throw StoreError("no random bytes for a token")
        }
        _ = try pool.withConnection { (db) throws(StoreError) in
            try db.query("INSERT INTO host_tokens (sha256, host, created) VALUES ($1, $2, $3)",
                         [.text(digest), .text(host), .integer(now)])
        }
        return token
    }

    public func host(forToken token: String) throws(StoreError) -> String? {
        guard let digest = HostToken.hash(token) else { return nil }
        return try pool.withConnection { (db) throws(StoreError) -> String? in
            let result = try db.query("SELECT host FROM host_tokens WHERE sha256 = $1 AND revoked IS NULL", [.text(digest)])
            return result.rows == 0 ? nil : result.text(0, 0)
        }
    }

    public func listHostTokens() throws(StoreError) -> [HostTokenRecord] {
        try pool.withConnection { (db) throws(StoreError) -> [HostTokenRecord] in
            let result = try db.query("SELECT sha256, host, created, revoked FROM host_tokens ORDER BY created, sha256")
            return (0..<result.rows).map { row in
                HostTokenRecord(id: String((result.text(row, 0) ?? "").prefix(AuthStore.tokenIDLength)),
                                host: result.text(row, 1) ?? "", created: result.int64(row, 2) ?? 0,
                                revoked: result.int64(row, 3))
            }
        }
    }

    public func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> [String] {
        try pool.withConnection { (db) throws(StoreError) -> [String] in
            let result: PostgresResult
            if let id {
                guard id.utf8.count == AuthStore.tokenIDLength,
                      id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return [] }
                result = try db.query("""
                    UPDATE host_tokens SET revoked = $2 WHERE substr(sha256, 1, 16) = $1 AND revoked IS NULL RETURNING host
                    """, [.text(id), .integer(now)])
            } else {
                result = try db.query("UPDATE host_tokens SET revoked = $2 WHERE host = $1 AND revoked IS NULL RETURNING host",
                                      [.text(host), .integer(now)])
            }
            return (0..<result.rows).compactMap { result.text($0, 0) }
        }
    }

    public func storeAccessToken(sha256: String, user: String, host: String, kid: String,
                                 now: Int64, expires: Int64) throws(StoreError) {
        _ = try pool.withConnection { (db) throws(StoreError) in
            try db.query("""
                INSERT INTO access_tokens (sha256, "user", host, kid, created, expires) VALUES ($1, $2, $3, $4, $5, $6)
                """, [.text(sha256), .text(user), .text(host), .text(kid), .integer(now), .integer(expires)])
        }
    }

    // MARK: - Audit

    public func audit(_ event: AuditEvent, now: Int64) throws(StoreError) {
        _ = try pool.withConnection { (db) throws(StoreError) in
            try db.query("""
                INSERT INTO audit ("time", event, "user", host, kid, jti, outcome, reason, peer)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                """, [.integer(now), .text(event.event), .text(event.user), .text(event.host), .text(event.kid),
                      .text(event.jti), .text(event.outcome), .text(event.reason), .text(event.peer)])
        }
    }

    public func auditRecords(user: String?, since: Int64?, limit: Int) throws(StoreError) -> [AuditRecord] {
        try pool.withConnection { (db) throws(StoreError) -> [AuditRecord] in
            let result = try db.query("""
                SELECT id, "time", event, "user", host, kid, jti, outcome, reason, peer FROM
                (SELECT * FROM audit WHERE ($1::text IS NULL OR "user" = $1::text)
                 AND ($2::bigint IS NULL OR "time" >= $2::bigint) ORDER BY id DESC LIMIT $3::bigint) AS recent
                ORDER BY id
                """, [.text(user), .integer(since), .integer(Int64(limit))])
            return (0..<result.rows).map { row in
                let event = AuditEvent(event: result.text(row, 2) ?? "", user: result.text(row, 3), host: result.text(row, 4),
                                       kid: result.text(row, 5), jti: result.text(row, 6),
                                       outcome: result.text(row, 7) ?? "", reason: result.text(row, 8),
                                       peer: result.text(row, 9))
                return AuditRecord(id: result.int64(row, 0) ?? 0, time: result.int64(row, 1) ?? 0, event: event)
            }
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

    /// One statement: adds to the open window, or starts a new one when it has expired.
    public func recordFailure(key: String, now: Int64, window: Int64) throws(StoreError) {
        _ = try pool.withConnection { (db) throws(StoreError) in
            try db.query("""
                INSERT INTO rate_counters (key, window_start, expires, count) VALUES ($1, $2, $3, 1)
                ON CONFLICT (key) DO UPDATE SET
                    count = CASE WHEN rate_counters.expires <= $2 THEN 1 ELSE rate_counters.count + 1 END,
                    window_start = CASE WHEN rate_counters.expires <= $2 THEN $2 ELSE rate_counters.window_start END,
                    expires = CASE WHEN rate_counters.expires <= $2 THEN $3 ELSE rate_counters.expires END
                """, [.text(key), .integer(now), .integer(now + window)])
        }
    }

    // MARK: - Pruning

    /// Deletes in batches of `AuthStore.pruneBatch`, each its own short statement that
    /// skips rows another instance's pruner holds (SKIP LOCKED): no login waits on it.
    public func prune(now: Int64, replayBefore: Int64, auditBefore: Int64?) throws(StoreError) -> PruneResult {
        let batch = AuthStore.pruneBatch
        var result = PruneResult()
        result.replay = try deleteInBatches("""
            DELETE FROM replay WHERE jti IN
            (SELECT jti FROM replay WHERE exp < $1 LIMIT \(batch) FOR UPDATE SKIP LOCKED)
            """, replayBefore)
        result.accessTokens = try deleteInBatches("""
            DELETE FROM access_tokens WHERE sha256 IN
            (SELECT sha256 FROM access_tokens WHERE expires < $1 LIMIT \(batch) FOR UPDATE SKIP LOCKED)
            """, now)
        result.rateCounters = try deleteInBatches("""
            DELETE FROM rate_counters WHERE key IN
            (SELECT key FROM rate_counters WHERE expires < $1 LIMIT \(batch) FOR UPDATE SKIP LOCKED)
            """, now)
        if let auditBefore {
            result.audit = try deleteInBatches("""
                DELETE FROM audit WHERE id IN
                (SELECT id FROM audit WHERE "time" < $1 ORDER BY id LIMIT \(batch) FOR UPDATE SKIP LOCKED)
                """, auditBefore)
        }
        return result
    }

    private func deleteInBatches(_ sql: String, _ before: Int64) throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try pool.withConnection { (db) throws(StoreError) -> Int in
                try db.query(sql, [.integer(before)]).affected
            }
            total += deleted
            if deleted < AuthStore.pruneBatch { return total }
        }
    }
}

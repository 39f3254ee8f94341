import FingerAuthDomain

/// The audit log and pruning.
extension PostgresStore {
    static let insertAuditSQL = #"""
        INSERT INTO audit ("time", event, "user", host, kid, jti, outcome, reason, peer, claimed_user, verified, count, rule, admin,
                           service, client_service)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
        """#

    static func auditParameters(_ event: AuditEvent, time: Int64) -> [PostgresValue] {
        [.integer(time), .text(event.event), .text(event.user), .text(event.host), .text(event.kid), .text(event.jti),
         .text(event.outcome), .text(event.reason), .text(event.peer), .text(event.claimedUser),
         .boolean(event.verified), .integer(event.count), .integer(event.rule), .text(event.admin),
         .text(event.service), .text(event.clientService)]
    }

    static func insertAudit(_ db: PostgresConnection, _ event: AuditEvent, time: Int64) throws(StoreError) {
        _ = try db.query(insertAuditSQL, auditParameters(event, time: time))
    }

    public func audit(_ event: AuditEvent, now: Int64) throws(StoreError) {
        try transaction { (db) throws(StoreError) in try Self.insertAudit(db, event, time: now) }
    }

    public func auditRecords(_ filter: AuditFilter) throws(StoreError) -> [AuditRecord] {
        try pool.withConnection { (db) throws(StoreError) -> [AuditRecord] in
            let result = try db.query(#"""
                SELECT id, "time", event, "user", host, kid, jti, outcome, reason, peer, claimed_user, verified, count, rule,
                       service, client_service FROM
                (SELECT * FROM audit WHERE ($1::text IS NULL OR "user" = $1::text)
                 AND ($2::bigint IS NULL OR "time" >= $2::bigint) ORDER BY id DESC LIMIT $3::bigint) AS recent
                ORDER BY id
                """#, [.text(filter.user), .integer(filter.since), .integer(Int64(filter.limit))])
            return (0..<result.rows).map { row in
                var event = AuditEvent(event: result.text(row, 2) ?? "", user: result.text(row, 3),
                                       claimedUser: result.text(row, 10), host: result.text(row, 4),
                                       kid: result.text(row, 5), jti: result.text(row, 6),
                                       outcome: result.text(row, 7) ?? "", reason: result.text(row, 8),
                                       peer: result.text(row, 9), verified: result.bool(row, 11) ?? true,
                                       count: result.int64(row, 12) ?? 1, rule: result.int64(row, 13))
                event.service = result.text(row, 14)
                event.clientService = result.text(row, 15)
                return AuditRecord(id: result.int64(row, 0) ?? 0, time: result.int64(row, 1) ?? 0, event: event)
            }
        }
    }

    /// Deletes in batches of `SQLiteStore.pruneBatch`, each its own short statement that
    /// skips rows another instance's pruner holds (SKIP LOCKED): no login waits on it. Every
    /// time is the database's (`now()`), not this instance's.
    public func prune(_ policy: PrunePolicy) throws(StoreError) -> PruneResult {
        let batch = SQLiteStore.pruneBatch
        let now = "extract(epoch FROM now())::bigint"
        var result = PruneResult()
        result.replay = try deleteInBatches("""
            DELETE FROM replay WHERE jti IN
            (SELECT jti FROM replay WHERE keep_until < \(now) LIMIT \(batch) FOR UPDATE SKIP LOCKED)
            """, nil)
        result.accessTokens = try deleteInBatches("""
            DELETE FROM access_tokens WHERE sha256 IN
            (SELECT sha256 FROM access_tokens WHERE expires < \(now) LIMIT \(batch) FOR UPDATE SKIP LOCKED)
            """, nil)
        result.rateCounters = try deleteInBatches("""
            DELETE FROM rate_counters WHERE key IN
            (SELECT key FROM rate_counters WHERE expires < \(now) LIMIT \(batch) FOR UPDATE SKIP LOCKED)
            """, nil)
        if let age = policy.auditRetention {
            result.audit = try deleteInBatches("""
                DELETE FROM audit WHERE id IN
                (SELECT id FROM audit WHERE verified AND "time" < \(now) - $1::bigint ORDER BY id LIMIT \(batch) FOR UPDATE SKIP LOCKED)
                """, age)
        }
        if let age = policy.unverifiedAuditRetention {
            result.unverifiedAudit = try deleteInBatches("""
                DELETE FROM audit WHERE id IN
                (SELECT id FROM audit WHERE NOT verified AND "time" < \(now) - $1::bigint ORDER BY id LIMIT \(batch) FOR UPDATE SKIP LOCKED)
                """, age)
        }
        return result
    }

    private func deleteInBatches(_ sql: String, _ age: Int64?) throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try pool.withConnection { (db) throws(StoreError) -> Int in
                try db.query(sql, age.map { [.integer($0)] } ?? []).affected
            }
            total += deleted
            if deleted < SQLiteStore.pruneBatch { return total }
        }
    }
}

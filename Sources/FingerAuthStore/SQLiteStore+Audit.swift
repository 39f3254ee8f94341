import FingerAuthDomain

/// The audit log and pruning.
extension SQLiteStore {
    /// Appends one audit row at time `now` (admin commands). Callers answer only after this returned.
    public func audit(_ event: AuditEvent, now: Int64) throws(StoreError) {
        try write { (db) throws(StoreError) in try Self.insertAudit(db, event, time: now) }
    }

    static func insertAudit(_ db: SQLiteDatabase, _ event: AuditEvent, time: Int64) throws(StoreError) {
        try db.withStatement("""
            INSERT INTO audit (time, event, user, host, kid, jti, outcome, reason, peer, claimed_user, verified, count, rule, admin,
                               service, client_service)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
            """) { (insert) throws(StoreError) in
            try insert.bind(1, time)
            try insert.bind(2, event.event)
            try insert.bind(3, event.user)
            try insert.bind(4, event.host)
            try insert.bind(5, event.kid)
            try insert.bind(6, event.jti)
            try insert.bind(7, event.outcome)
            try insert.bind(8, event.reason)
            try insert.bind(9, event.peer)
            try insert.bind(10, event.claimedUser)
            try insert.bind(11, event.verified)
            try insert.bind(12, event.count)
            try insert.bind(13, event.rule)
            try insert.bind(14, event.admin)
            try insert.bind(15, event.service)
            try insert.bind(16, event.clientService)
            try insert.run()
        }
    }

    /// Audit rows of `filter.user` (any user when nil) at or after `filter.since`, the last
    /// `filter.limit` of them, oldest first.
    public func auditRecords(_ filter: AuditFilter) throws(StoreError) -> [AuditRecord] {
        try read { (db) throws(StoreError) -> [AuditRecord] in
            try db.withStatement("""
                SELECT id, time, event, user, host, kid, jti, outcome, reason, peer, claimed_user, verified, count, rule,
                       service, client_service FROM
                (SELECT * FROM audit WHERE (?1 IS NULL OR user = ?1) AND (?2 IS NULL OR time >= ?2)
                 ORDER BY id DESC LIMIT ?3) ORDER BY id
                """) { (stmt) throws(StoreError) -> [AuditRecord] in
                try stmt.bind(1, filter.user)
                try stmt.bind(2, filter.since)
                try stmt.bind(3, Int64(filter.limit))
                var records: [AuditRecord] = []
                while try stmt.step() {
                    var event = AuditEvent(event: stmt.text(2) ?? "", user: stmt.text(3), claimedUser: stmt.text(10),
                                           host: stmt.text(4), kid: stmt.text(5), jti: stmt.text(6),
                                           outcome: stmt.text(7) ?? "", reason: stmt.text(8), peer: stmt.text(9),
                                           verified: (stmt.int64(11) ?? 1) != 0, count: stmt.int64(12) ?? 1,
                                           rule: stmt.int64(13))
                    event.service = stmt.text(14)
                    event.clientService = stmt.text(15)
                    records.append(AuditRecord(id: stmt.int64(0) ?? 0, time: stmt.int64(1) ?? 0, event: event))
                }
                return records
            }
        }
    }

    /// Deletes replay rows past `keep_until`, expired access tokens and audit rows past
    /// their retention — every time by SQLite's clock — at most `pruneBatch` rows per
    /// statement, taking the writer between batches so that a login waits for one batch at most.
    public func prune(_ policy: PrunePolicy) throws(StoreError) -> PruneResult {
        let now = "CAST(strftime('%s', 'now') AS INTEGER)"
        let batch = Self.pruneBatch
        var result = PruneResult()
        result.replay = try deleteInBatches(
            "DELETE FROM replay WHERE jti IN (SELECT jti FROM replay WHERE keep_until < \(now) LIMIT \(batch))", nil)
        result.accessTokens = try deleteInBatches(
            "DELETE FROM access_tokens WHERE sha256 IN (SELECT sha256 FROM access_tokens WHERE expires < \(now) LIMIT \(batch))", nil)
        if let age = policy.auditRetention {
            result.audit = try deleteInBatches("""
                DELETE FROM audit WHERE id IN
                (SELECT id FROM audit WHERE verified = 1 AND time < \(now) - ?1 ORDER BY id LIMIT \(batch))
                """, age)
        }
        if let age = policy.unverifiedAuditRetention {
            result.unverifiedAudit = try deleteInBatches("""
                DELETE FROM audit WHERE id IN
                (SELECT id FROM audit WHERE verified = 0 AND time < \(now) - ?1 ORDER BY id LIMIT \(batch))
                """, age)
        }
        return result
    }

    /// Rows one pruning statement deletes at most.
    public static let pruneBatch = 1000

    private func deleteInBatches(_ sql: String, _ age: Int64?) throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try write { (db) throws(StoreError) -> Int in
                try db.withStatement(sql) { (stmt) throws(StoreError) -> Int in
                    if let age { try stmt.bind(1, age) }
                    try stmt.run()
                    return db.changes
                }
            }
            total += deleted
            if deleted < Self.pruneBatch { return total }
        }
    }
}

import FingerAuthCore
import FingerAuthDomain

/// The audit log, its refusal counts, the shared failure counts of the rate limits and
/// pruning, the same SQL on both stores.
enum AuditTables {
    /// The statement that appends `event` at `time`.
    static func insert(_ event: AuditEvent, time: Int64) -> SQLStatement {
        SQLStatement(
            #"""
            INSERT INTO audit ("time", event, "user", host, kid, jti, outcome, reason, peer, claimed_user, verified, count,
                               rule, admin, service, client_service, ready_ms, match_ms, connect_ms, claimed_time,
                               approval, client_address, workstation)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,
                    ?23)
            """#,
            [
                .integer(time), .text(event.event.name), .text(event.user), .text(event.host), .text(event.kid),
                .text(event.jti), .text(event.outcome.name), .text(event.reason?.text), .text(event.peer),
                .text(event.claimedUser), .boolean(event.verified), .integer(event.count), .integer(event.rule),
                .text(event.admin), .text(event.service), .text(event.clientService), .integer(event.stages?.ready),
                .integer(event.stages?.match), .integer(event.stages?.connect), .integer(event.claimedTime),
                .text(event.approval), .text(event.clientAddress), .text(event.workstation),
            ])
    }

    static func insert(_ db: some SQLConnection, _ event: AuditEvent, time: Int64) throws(StoreError) {
        try db.run(insert(event, time: time))
    }

    /// The statement that adds `count` to the `refusals` row of (`peer`, `window`), creating it.
    static func refusals(peer: String, window: Int64, count: Int64, reason: ReasonCode) -> SQLStatement {
        SQLStatement(
            #"""
            INSERT INTO audit ("time", event, outcome, reason, peer, verified, count)
            VALUES (?1, \#(AuditEventKind.refusals.sqlLiteral), \#(AuditOutcome.deny.sqlLiteral), ?2, ?3, FALSE, ?4)
            ON CONFLICT (peer, "time") WHERE event = \#(AuditEventKind.refusals.sqlLiteral)
            DO UPDATE SET count = audit.count + EXCLUDED.count
            """#, [.integer(window), .text(reason.rawValue), .text(peer), .integer(count)])
    }

    /// Rows of `filter.user` (any user when nil) at or after `filter.since`, the last
    /// `filter.limit` of them, oldest first.
    static func records<DB: SQLConnection>(_ db: DB, _ filter: AuditFilter) throws(StoreError) -> [AuditRecord] {
        try db.rows(
            #"""
            SELECT id, "time", event, "user", host, kid, jti, outcome, reason, peer, claimed_user, verified, count, rule,
                   service, client_service, ready_ms, match_ms, connect_ms, claimed_time, approval, client_address,
                   workstation FROM
            (SELECT * FROM audit WHERE (CAST(?1 AS TEXT) IS NULL OR "user" = ?1)
               AND (CAST(?2 AS BIGINT) IS NULL OR "time" >= ?2) ORDER BY id DESC LIMIT ?3) AS recent
            ORDER BY id
            """#, [.text(filter.user), .integer(filter.since), .integer(Int64(filter.limit))]
        ) { (row: DB.Row) throws(StoreError) in
            var event = AuditEvent(
                event: AuditEventKind(name: row.text(2) ?? ""), user: row.text(3), claimedUser: row.text(10),
                host: row.text(4),
                kid: row.text(5), jti: row.text(6), outcome: AuditOutcome(name: row.text(7) ?? ""),
                reason: row.text(8).map(AuditReason.init(text:)),
                peer: row.text(9), verified: row.bool(11) ?? true, count: row.int64(12) ?? 1,
                rule: row.int64(13))
            event.service = row.text(14)
            event.clientService = row.text(15)
            let stages = LoginStageReport(ready: row.int64(16), match: row.int64(17), connect: row.int64(18))
            event.stages = stages == LoginStageReport() ? nil : stages
            event.claimedTime = row.int64(19)
            event.approval = row.text(20)
            event.clientAddress = row.text(21)
            event.workstation = row.text(22)
            return AuditRecord(id: row.int64(0) ?? 0, time: row.int64(1) ?? 0, event: event)
        }
    }

    // MARK: Shared failure counts (PostgreSQL)

    /// The statement that adds one failure to the open window of a shared rate-limit key,
    /// or starts a new one of `window` seconds.
    static func failure(key: String, now: Int64, window: Int64) -> SQLStatement {
        SQLStatement(
            """
            INSERT INTO rate_counters (key, window_start, expires, count) VALUES (?1, ?2, ?3, 1)
            ON CONFLICT (key) DO UPDATE SET
                count = CASE WHEN rate_counters.expires <= ?2 THEN 1 ELSE rate_counters.count + 1 END,
                window_start = CASE WHEN rate_counters.expires <= ?2 THEN ?2 ELSE rate_counters.window_start END,
                expires = CASE WHEN rate_counters.expires <= ?2 THEN ?3 ELSE rate_counters.expires END
            """, [.text(key), .integer(now), .integer(now &+ window)])
    }

    /// One more attempt for `key` (as `failure`), and the count with it.
    static func countAttempt<DB: SQLConnection>(_ db: DB, key: String, now: Int64, window: Int64) throws(StoreError)
        -> Int
    {
        let statement = failure(key: key, now: now, window: window)
        let counted = try db.first(statement.sql + " RETURNING count", statement.values) {
            (row: DB.Row) throws(StoreError) -> Int in
            guard let count = row.int64(0) else { throw StoreError("corrupt row in table rate_counters") }
            return Int(count)
        }
        guard let counted else { throw StoreError("rate_counters: no count returned") }
        return counted
    }

    /// The statement that takes one attempt back from `key`'s open window.
    static func takeBack(key: String, now: Int64) -> SQLStatement {
        SQLStatement(
            "UPDATE rate_counters SET count = count - 1 WHERE key = ?1 AND expires > ?2 AND count > 0",
            [.text(key), .integer(now)])
    }

    /// The open window of `key` at `now`.
    static func failureWindow<DB: SQLConnection>(_ db: DB, key: String, now: Int64) throws(StoreError) -> FailureWindow?
    {
        try db.first(
            "SELECT count, expires FROM rate_counters WHERE key = ?1 AND expires > ?2",
            [.text(key), .integer(now)]
        ) { (row: DB.Row) throws(StoreError) -> FailureWindow in
            guard let count = row.int64(0), let end = row.int64(1) else {
                throw StoreError("corrupt row in table rate_counters")
            }
            return FailureWindow(count: Int(count), end: end)
        }
    }

    // MARK: Pruning

    /// Rows one pruning statement deletes at most.
    static let pruneBatch = 1000

    /// The statements of one pruning pass, each deleting at most `pruneBatch` rows at a
    /// time by the database's own clock; `verified` and `unverified` are the retentions in
    /// seconds, when given. Each comes with the field of `PruneResult` it counts into.
    static func pruning(
        _ dialect: SQLDialect,
        _ policy: PrunePolicy
    ) -> [(WritableKeyPath<PruneResult, Int>, SQLStatement)] {
        let now = dialect.statementTime
        let tail = "LIMIT \(pruneBatch)\(dialect.skipLocked)"
        var statements: [(WritableKeyPath<PruneResult, Int>, SQLStatement)] = [
            (
                \.replay,
                SQLStatement(
                    "DELETE FROM replay WHERE jti IN (SELECT jti FROM replay WHERE keep_until < \(now) \(tail))")
            ),
            (
                \.accessTokens,
                SQLStatement(
                    """
                    DELETE FROM access_tokens WHERE sha256 IN (SELECT sha256 FROM access_tokens WHERE expires < \(now) \(tail))
                    """)
            ),
            (
                \.grants,
                SQLStatement(
                    """
                    DELETE FROM offline_grants WHERE gid IN
                    (SELECT gid FROM offline_grants
                      WHERE not_after < \(now) - \(OfflineTables.keptAfterEnd) OR withdrawn < \(now) - \(OfflineTables.keptAfterEnd)
                      \(tail))
                    """)
            ),
        ]
        if dialect.sharesFailureCounts {
            statements.append(
                (
                    \.rateCounters,
                    SQLStatement(
                        """
                        DELETE FROM rate_counters WHERE key IN (SELECT key FROM rate_counters WHERE expires < \(now) \(tail))
                        """)
                ))
        }
        for (field, age, predicate) in [
            (\PruneResult.audit, policy.auditRetention, dialect.verified),
            (\PruneResult.unverifiedAudit, policy.unverifiedAuditRetention, dialect.unverified),
        ] {
            guard let age else { continue }
            statements.append(
                (
                    field,
                    SQLStatement(
                        """
                        DELETE FROM audit WHERE id IN
                        (SELECT id FROM audit WHERE \(predicate) AND "time" < \(now) - ?1 ORDER BY id \(tail))
                        """, [.integer(age)])
                ))
        }
        return statements
    }
}

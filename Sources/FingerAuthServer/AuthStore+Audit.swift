/// An audit row as `fingerauthd audit` prints it: the event and its time.
public struct AuditRecord: Sendable, Equatable {
    public var id: Int64
    /// Seconds since the epoch.
    public var time: Int64
    public var event: AuditEvent
}

/// The audit log: one row per login, registration, revocation and admin change, written
/// before the answer is sent.
extension AuthStore {
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

    /// Audit rows of `user` (any user when nil) at or after `since`, the last `limit` of
    /// them, oldest first.
    public func auditRecords(user: String?, since: Int64?, limit: Int) throws(StoreError) -> [AuditRecord] {
        try lock.withLock { () throws(StoreError) -> [AuditRecord] in
            let stmt = try database.prepare("""
                SELECT id, time, event, user, host, kid, jti, outcome, reason, peer FROM
                (SELECT * FROM audit WHERE (?1 IS NULL OR user = ?1) AND (?2 IS NULL OR time >= ?2)
                 ORDER BY id DESC LIMIT ?3) ORDER BY id
                """)
            try stmt.bind(1, user)
            try stmt.bind(2, since)
            try stmt.bind(3, Int64(limit))
            var records: [AuditRecord] = []
            while try stmt.step() {
                let event = AuditEvent(event: stmt.text(2) ?? "", user: stmt.text(3), host: stmt.text(4),
                                       kid: stmt.text(5), jti: stmt.text(6), outcome: stmt.text(7) ?? "",
                                       reason: stmt.text(8), peer: stmt.text(9))
                records.append(AuditRecord(id: stmt.int64(0) ?? 0, time: stmt.int64(1) ?? 0, event: event))
            }
            return records
        }
    }
}

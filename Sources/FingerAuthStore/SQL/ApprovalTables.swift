import FingerAuthCore
import FingerAuthDomain

/// Remote approvals (`ApprovalStore`), the same SQL on both stores. A row leaves `pending`
/// only through a statement that says `WHERE … AND status = 'pending'`, so that of two
/// instances deciding, withdrawing or expiring one approval at once exactly one changes it
/// (PostgreSQL re-checks the condition once the other's row lock is released) and only that
/// one writes its audit rows.
enum ApprovalTables {
    /// Schema 13: the approvals, and the approval, client address and workstation an audit
    /// row names; `integer` is the store's 64-bit integer type.
    ///
    /// `approvals_pending` is unique: one pending approval per user is the rule, and the
    /// transaction that opens one (serialised per user) expires or withdraws the user's
    /// other pending rows before it inserts, so the index only ever catches a bug.
    /// `approvals_created` serves pruning.
    static func schema(integer: String) -> String {
        """
        CREATE TABLE approvals (
            id TEXT PRIMARY KEY NOT NULL,
            code TEXT NOT NULL,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            host_kid TEXT NOT NULL,
            service TEXT NOT NULL,
            client_address TEXT NOT NULL,
            terminal TEXT NOT NULL,
            nonce TEXT NOT NULL,
            created \(integer) NOT NULL,
            expires \(integer) NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'withdrawn')),
            decided \(integer),
            decided_kid TEXT,
            workstation TEXT
        );
        CREATE UNIQUE INDEX approvals_pending ON approvals ("user") WHERE status = 'pending';
        CREATE INDEX approvals_host ON approvals (host, created);
        CREATE INDEX approvals_user ON approvals ("user", created);
        CREATE INDEX approvals_created ON approvals (created);
        ALTER TABLE audit ADD COLUMN approval TEXT;
        ALTER TABLE audit ADD COLUMN client_address TEXT;
        ALTER TABLE audit ADD COLUMN workstation TEXT;
        """
    }

    static let columns = #"""
        id, code, "user", host, host_kid, service, client_address, terminal, nonce, created, expires, status, decided,
        decided_kid, workstation, caller
        """#

    /// Schema 15: who asked, when that is not the user (`ApprovalRecord.caller`).
    static let callerColumn = "ALTER TABLE approvals ADD COLUMN caller TEXT NOT NULL DEFAULT '';"

    /// The approval in a row of `columns` (or of the same columns RETURNING).
    static func record(_ row: some SQLRow) throws(StoreError) -> ApprovalRecord {
        guard let id = row.text(0), let code = row.text(1), let user = row.text(2), let host = row.text(3),
            let hostKid = row.text(4), let service = row.text(5), let clientAddress = row.text(6),
            let terminal = row.text(7), let nonce = row.text(8), let created = row.int64(9),
            let expires = row.int64(10), let status = row.text(11).flatMap(ApprovalStatus.init(rawValue:)),
            let caller = row.text(15)
        else {
            throw StoreError("corrupt row in table approvals")
        }
        return ApprovalRecord(
            id: id, code: code, user: user, host: host, hostKid: hostKid, service: service,
            clientAddress: clientAddress, terminal: terminal, nonce: nonce, caller: caller, created: created,
            expires: expires, status: status, decided: row.int64(12), decidedKid: row.text(13),
            workstation: row.text(14))
    }

    static func approval<DB: SQLConnection>(_ db: DB, id: String) throws(StoreError) -> ApprovalRecord? {
        try db.first("SELECT \(columns) FROM approvals WHERE id = ?1", [.text(id)]) {
            (row: DB.Row) throws(StoreError) in try record(row)
        }
    }

    /// The user's pending approvals not past their expiry at `now`, newest first.
    static func pending<DB: SQLConnection>(_ db: DB, user: String, now: Int64) throws(StoreError) -> [ApprovalRecord] {
        try db.rows(
            #"""
            SELECT \#(columns) FROM approvals WHERE "user" = ?1 AND status = 'pending' AND expires > ?2
             ORDER BY created DESC, id
            """#, [.text(user), .integer(now)]
        ) { (row: DB.Row) throws(StoreError) in try record(row) }
    }

    /// When the user last denied an approval, if after `after`.
    static func lastDenial<DB: SQLConnection>(_ db: DB, user: String, after: Int64) throws(StoreError) -> Int64? {
        let found = try db.first(
            #"SELECT max(decided) FROM approvals WHERE "user" = ?1 AND status = 'denied' AND decided > ?2"#,
            [.text(user), .integer(after)]
        ) { (row: DB.Row) throws(StoreError) -> Int64? in row.int64(0) }
        return found ?? nil
    }

    /// Inserts `approval` as pending.
    static func insert(_ db: some SQLConnection, _ approval: ApprovalRecord) throws(StoreError) {
        try db.execute(
            #"""
            INSERT INTO approvals (id, code, "user", host, host_kid, service, client_address, terminal, nonce, created,
                                   expires, status, caller)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'pending', ?12)
            """#,
            [
                .text(approval.id), .text(approval.code), .text(approval.user), .text(approval.host),
                .text(approval.hostKid), .text(approval.service), .text(approval.clientAddress),
                .text(approval.terminal), .text(approval.nonce), .integer(approval.created),
                .integer(approval.expires), .text(approval.caller),
            ])
    }

    /// Moves the user's pending approvals that are past their expiry at `now` to `expired`;
    /// the records after it.
    static func expireOverdue<DB: SQLConnection>(_ db: DB, user: String, now: Int64) throws(StoreError)
        -> [ApprovalRecord]
    {
        try db.rows(
            #"""
            UPDATE approvals SET status = 'expired', decided = ?2
             WHERE "user" = ?1 AND status = 'pending' AND expires <= ?2
            RETURNING \#(columns)
            """#, [.text(user), .integer(now)]
        ) { (row: DB.Row) throws(StoreError) in try record(row) }
    }

    /// Moves approval `id` from `pending` to `status` (no decision: no key, no workstation);
    /// the record after it, nil when it was not pending.
    static func close<DB: SQLConnection>(_ db: DB, id: String, as status: ApprovalStatus, now: Int64)
        throws(StoreError) -> ApprovalRecord?
    {
        try db.first(
            """
            UPDATE approvals SET status = ?2, decided = ?3 WHERE id = ?1 AND status = 'pending'
            RETURNING \(columns)
            """, [.text(id), .text(status.rawValue), .integer(now)]
        ) { (row: DB.Row) throws(StoreError) in try record(row) }
    }

    /// Applies `decision` if its approval is pending and not past its expiry at `now`; the
    /// record after it, nil when it changed nothing.
    static func decide<DB: SQLConnection>(_ db: DB, _ decision: ApprovalDecision, now: Int64) throws(StoreError)
        -> ApprovalRecord?
    {
        let status: ApprovalStatus = decision.approve ? .approved : .denied
        return try db.first(
            """
            UPDATE approvals SET status = ?2, decided = ?3, decided_kid = ?4, workstation = ?5
             WHERE id = ?1 AND status = 'pending' AND expires > ?3
            RETURNING \(columns)
            """,
            [
                .text(decision.id), .text(status.rawValue), .integer(now), .text(decision.kid),
                .text(decision.workstation),
            ]
        ) { (row: DB.Row) throws(StoreError) in try record(row) }
    }

    /// The last `limit` approvals of `user` and/or `host`, newest first. Only the filters
    /// given become conditions, so that each has a plan that uses its index.
    static func list<DB: SQLConnection>(_ db: DB, user: String?, host: String?, limit: Int) throws(StoreError)
        -> [ApprovalRecord]
    {
        var conditions: [String] = []
        var values: [SQLValue] = []
        if let user {
            values.append(.text(user))
            conditions.append(#""user" = ?\#(values.count)"#)
        }
        if let host {
            values.append(.text(host))
            conditions.append("host = ?\(values.count)")
        }
        values.append(.integer(Int64(max(0, limit))))
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return try db.rows(
            "SELECT \(columns) FROM approvals\(filter) ORDER BY created DESC, id LIMIT ?\(values.count)", values
        ) { (row: DB.Row) throws(StoreError) in try record(row) }
    }

    /// The audit row the store writes itself when an approval leaves `pending` without a
    /// decision: `approval_expired`, or `approval_withdrawn` for a retry's predecessor.
    static func audit(_ approval: ApprovalRecord, _ event: AuditEventKind, reason: ReasonCode? = nil) -> AuditEvent {
        var row = AuditEvent(
            event: event, user: approval.user, host: approval.host, outcome: .accept, reason: reason.map { .code($0) })
        row.service = approval.service
        row.approval = approval.id
        row.clientAddress = approval.clientAddress.isEmpty ? nil : approval.clientAddress
        return row
    }

    // MARK: Pruning

    /// How long an approval is kept after it was decided or expired, seconds: the console's
    /// user and host pages list them.
    static let keptAfterEnd: Int64 = 30 * 86_400

    /// The pruning statement: approvals created, and decided or expired, more than
    /// `keptAfterEnd` ago, `AuditTables.pruneBatch` at a time by the database's clock.
    static func pruning(_ dialect: SQLDialect) -> SQLStatement {
        let cutoff = "\(dialect.statementTime) - \(keptAfterEnd)"
        return SQLStatement(
            """
            DELETE FROM approvals WHERE id IN
            (SELECT id FROM approvals WHERE created < \(cutoff) AND COALESCE(decided, expires) < \(cutoff)
              LIMIT \(AuditTables.pruneBatch)\(dialect.skipLocked))
            """)
    }
}

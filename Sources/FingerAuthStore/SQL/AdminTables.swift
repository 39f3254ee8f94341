import FingerAuthCore
import FingerAuthDomain

/// The admin console's accounts and reads, on both stores through the same SQL
/// (`SQLConnection`). An account is made on the command line with a one-time setup secret
/// (only its SHA-256 is stored); the admin chooses a password on the setup page, and only
/// the password's memory-hard hash is kept.
enum AdminTables {
    /// The condition of an accepted login's row (`audit_user` indexes it), its columns
    /// qualified with `table`.
    static func acceptedLogin(_ table: String = "") -> String {
        "\(table)event = \(AuditEventKind.login.sqlLiteral) AND \(table)outcome = \(AuditOutcome.accept.sqlLiteral)"
    }

    static func create(
        _ db: some SQLConnection, name: String, setupDigest: [UInt8], expires: Int64,
        now: Int64
    ) throws(StoreError) -> Bool {
        let rows = try db.textRows(
            """
            INSERT INTO admins (name, setup_sha256, setup_expires, created)
            VALUES (?1, ?2, CAST(?3 AS BIGINT), CAST(?4 AS BIGINT)) ON CONFLICT (name) DO NOTHING RETURNING name
            """, [name, Base64URL.encode(setupDigest), String(expires), String(now)])
        return rows.count == 1
    }

    /// Sets the password and closes the link; the link's digest stays (with no expiry), so
    /// that the console can tell a used link from one that never was.
    static func completeSetup(
        _ db: some SQLConnection, setupDigest: [UInt8], passwordHash: String,
        now: Int64
    ) throws(StoreError) -> String? {
        let rows = try db.textRows(
            """
            UPDATE admins SET password_hash = ?2, setup_expires = NULL
             WHERE setup_sha256 = ?1 AND setup_expires > CAST(?3 AS BIGINT) RETURNING name
            """, [Base64URL.encode(setupDigest), passwordHash, String(now)])
        return rows.first?.first ?? nil
    }

    /// Open while `setup_expires` lies ahead; used when the digest stays without an expiry
    /// (`completeSetup`); unknown when no account holds the digest.
    static func setupState(_ db: some SQLConnection, setupDigest: [UInt8], now: Int64) throws(StoreError)
        -> AdminSetupState
    {
        let rows = try db.textRows(
            """
            SELECT name, CASE WHEN setup_expires IS NULL THEN 'used'
                              WHEN setup_expires > CAST(?2 AS BIGINT) THEN 'open' ELSE 'expired' END
              FROM admins WHERE setup_sha256 = ?1
            """, [Base64URL.encode(setupDigest), String(now)])
        guard let row = rows.first, row.count == 2, let name = row[0] else { return .unknown }
        switch row[1] {
        case "open": return .open(admin: name)
        case "expired": return .expired
        default: return .used
        }
    }

    /// A new setup secret for `name` in place of its password and of any older link.
    static func reset(_ db: some SQLConnection, name: String, setupDigest: [UInt8], expires: Int64) throws(StoreError)
        -> Bool
    {
        try db.textRows(
            """
            UPDATE admins SET password_hash = NULL, setup_sha256 = ?2, setup_expires = CAST(?3 AS BIGINT)
             WHERE name = ?1 RETURNING name
            """, [name, Base64URL.encode(setupDigest), String(expires)]
        ).count == 1
    }

    static func remove(_ db: some SQLConnection, name: String) throws(StoreError) -> Bool {
        try db.textRows("DELETE FROM admins WHERE name = ?1 RETURNING name", [name]).count == 1
    }

    static func passwordHash(_ db: some SQLConnection, name: String) throws(StoreError) -> String? {
        try db.textRows("SELECT password_hash FROM admins WHERE name = ?1", [name]).first?.first ?? nil
    }

    static func list(_ db: some SQLConnection) throws(StoreError) -> [(name: String, ready: Bool)] {
        try db.textRows(
            "SELECT name, CASE WHEN password_hash IS NULL THEN 'no' ELSE 'yes' END FROM admins ORDER BY name", []
        )
        .compactMap { row in
            guard row.count == 2, let name = row[0] else { return nil }
            return (name, row[1] == "yes")
        }
    }

    /// Only the filters given become conditions, so that each combination has a plan of its
    /// own that can use an index (`audit_user`, `audit_time`) rather than one plan for all
    /// that cannot; at most 2^7 statements, each prepared once per connection.
    static func audit(_ db: some SQLConnection, _ query: ConsoleAuditQuery) throws(StoreError) -> [AuditRecord] {
        var conditions: [String] = []
        var values: [String?] = []
        func add(_ condition: String, _ value: String?) {
            guard let value else { return }
            values.append(value)
            conditions.append(
                condition.split(separator: "?", omittingEmptySubsequences: false).joined(separator: "?\(values.count)"))
        }
        add(#""user" = ?"#, query.user)
        add("host = ?", query.host)
        add("event = ?", query.event)
        add("outcome = ?", query.outcome)
        add(#""time" >= CAST(? AS BIGINT)"#, query.since.map(String.init))
        add(#""time" < CAST(? AS BIGINT)"#, query.until.map(String.init))
        add("id < CAST(? AS BIGINT)", query.beforeID.map(String.init))
        values.append(String(query.limit))
        let rows = try db.textRows(
            """
            SELECT CAST(id AS TEXT), CAST("time" AS TEXT), event, "user", claimed_user, host, kid, outcome, reason, peer,
                   CAST(count AS TEXT), admin, approval, client_address, workstation, service, client_service
              FROM audit\(conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
             ORDER BY id DESC LIMIT CAST(?\(values.count) AS BIGINT)
            """, values)
        return rows.compactMap { row in
            guard row.count == 17, let id = row[0].flatMap({ Int64($0) }), let time = row[1].flatMap({ Int64($0) }),
                let event = row[2], let outcome = row[7]
            else { return nil }
            var audited = AuditEvent(
                event: AuditEventKind(name: event), user: row[3], claimedUser: row[4], host: row[5], kid: row[6],
                outcome: AuditOutcome(name: outcome),
                reason: row[8].map(AuditReason.init(text:)), peer: row[9],
                count: row[10].flatMap({ Int64($0) }) ?? 1, admin: row[11])
            audited.approval = row[12]
            audited.clientAddress = row[13]
            audited.workstation = row[14]
            audited.service = row[15]
            audited.clientService = row[16]
            return AuditRecord(id: id, time: time, event: audited)
        }
    }

    /// The time of each key's last accepted login, by kid (keys never used are absent): one
    /// seek per key in `audit_user (user, kid, event, outcome, time)`, whatever the number of
    /// audit rows of its user.
    static func lastLogins(_ db: some SQLConnection, of keys: [RegisteredKey]) throws(StoreError) -> [String: Int64] {
        var out: [String: Int64] = [:]
        for key in keys {
            let rows = try db.textRows(
                """
                SELECT CAST("time" AS TEXT) AS last FROM audit
                 WHERE "user" = ?1 AND kid = ?2 AND \(acceptedLogin()) ORDER BY "time" DESC LIMIT 1
                """, [key.user, key.kid])
            if let time = rows.first?.first?.flatMap({ Int64($0) }) { out[key.kid] = time }
        }
        return out
    }

    /// The time of the last accepted login by any key of each host (hosts never used are
    /// absent): per host, one seek per key registered on it.
    static func lastLogins(_ db: some SQLConnection, hosts: [String]) throws(StoreError) -> [String: Int64] {
        var out: [String: Int64] = [:]
        for host in hosts {
            let rows = try db.textRows(
                """
                SELECT CAST(MAX(last) AS TEXT) FROM
                  (SELECT (SELECT a."time" FROM audit a
                            WHERE a."user" = k."user" AND a.kid = k.kid AND \(acceptedLogin("a."))
                            ORDER BY a."time" DESC LIMIT 1) AS last
                     FROM keys k WHERE k.host = ?1) AS per_key
                """, [host])
            if let time = rows.first?.first?.flatMap({ Int64($0) }) { out[host] = time }
        }
        return out
    }

    /// The stage times of each host's last accepted logins: per host, a range of
    /// `audit_user` per key registered on it (no index of its own: see SQLiteSchema's 7).
    static func loginStages<DB: SQLConnection>(
        _ db: DB, hosts: [String], since: Int64,
        limit: Int
    ) throws(StoreError) -> [String: [LoginStageReport]] {
        var out: [String: [LoginStageReport]] = [:]
        for host in hosts {
            let reports = try db.rows(
                """
                SELECT a.ready_ms, a.match_ms, a.connect_ms FROM keys k JOIN audit a
                    ON a."user" = k."user" AND a.kid = k.kid AND \(acceptedLogin("a.")) AND a."time" >= ?2
                 WHERE k.host = ?1 AND (a.ready_ms IS NOT NULL OR a.match_ms IS NOT NULL OR a.connect_ms IS NOT NULL)
                 ORDER BY a."time" DESC LIMIT ?3
                """, [.text(host), .integer(since), .integer(Int64(limit))]
            ) { (row: DB.Row) throws(StoreError) in
                LoginStageReport(ready: row.int64(0), match: row.int64(1), connect: row.int64(2))
            }
            if !reports.isEmpty { out[host] = reports }
        }
        return out
    }

    static func loginsPerHour(_ db: some SQLConnection, since: Int64) throws(StoreError) -> [(
        hour: Int64, accepted: Int64, refused: Int64
    )] {
        let rows = try db.textRows(
            """
            SELECT CAST(("time" / 3600) * 3600 AS TEXT),
                   CAST(SUM(CASE WHEN outcome = \(AuditOutcome.accept.sqlLiteral) THEN count ELSE 0 END) AS TEXT),
                   CAST(SUM(CASE WHEN outcome = \(AuditOutcome.accept.sqlLiteral) THEN 0 ELSE count END) AS TEXT)
              FROM audit WHERE "time" >= CAST(?1 AS BIGINT) AND event = \(AuditEventKind.login.sqlLiteral)
             GROUP BY "time" / 3600 ORDER BY 1
            """, [String(since)])
        return rows.compactMap { row in
            guard row.count == 3, let hour = row[0].flatMap({ Int64($0) }),
                let accepted = row[1].flatMap({ Int64($0) }),
                let refused = row[2].flatMap({ Int64($0) })
            else { return nil }
            return (hour, accepted, refused)
        }
    }

    static func auditUsers(_ db: some SQLConnection) throws(StoreError) -> [(user: String, rows: Int64)] {
        try db.textRows(
            #"SELECT "user", CAST(COUNT(*) AS TEXT) FROM audit WHERE "user" IS NOT NULL GROUP BY "user" ORDER BY "user""#,
            []
        )
        .compactMap { row in
            guard row.count == 2, let user = row[0], let rows = row[1].flatMap({ Int64($0) }) else { return nil }
            return (user, rows)
        }
    }

    static func topRefusals(_ db: some SQLConnection, since: Int64, limit: Int) throws(StoreError) -> [(
        reason: String, count: Int64
    )] {
        let rows = try db.textRows(
            """
            SELECT reason, CAST(SUM(count) AS TEXT) FROM audit
             WHERE "time" >= CAST(?1 AS BIGINT) AND outcome = \(AuditOutcome.deny.sqlLiteral) AND reason IS NOT NULL
             GROUP BY reason ORDER BY SUM(count) DESC, reason LIMIT CAST(?2 AS BIGINT)
            """, [String(since), String(limit)])
        return rows.compactMap { row in
            guard row.count == 2, let reason = row[0], let count = row[1].flatMap({ Int64($0) }) else { return nil }
            return (reason, count)
        }
    }
}

import FingerAuthCore
import FingerAuthDomain

/// The registered keys and the replay table, the same SQL on both stores.
enum KeyTables {
    static let columns = #"SELECT kid, "user", host, jwk, status, created, kind, ek_sha256 FROM keys"#

    /// The key in a row of `columns` (or of the same columns RETURNING).
    static func key(_ row: some SQLRow) throws(StoreError) -> RegisteredKey {
        guard let kid = row.text(0), let user = row.text(1), let host = row.text(2),
            let jwkText = row.text(3), let statusText = row.text(4),
            let status = KeyStatus(rawValue: statusText),
            let json = try? JSONParser(maxBytes: 16 * 1024, maxDepth: 4).parse(jwkText),
            let jwk = JWK(json: json), let kind = row.text(6).flatMap(KeyOrigin.init(rawValue:))
        else {
            throw StoreError("corrupt row in table keys")
        }
        return RegisteredKey(
            kid: kid, user: user, host: host, jwk: jwk, status: status, created: row.int64(5) ?? 0,
            kind: kind, ek: row.text(7))
    }

    /// The key stored under `kid`, in any status.
    static func key<DB: SQLConnection>(_ db: DB, kid: String) throws(StoreError) -> RegisteredKey? {
        try db.first(columns + " WHERE kid = ?1", [.text(kid)]) { (row: DB.Row) throws(StoreError) in try key(row) }
    }

    /// Every registered key, oldest first.
    static func all<DB: SQLConnection>(_ db: DB) throws(StoreError) -> [RegisteredKey] {
        try db.rows(columns + " ORDER BY created, kid") { (row: DB.Row) throws(StoreError) in try key(row) }
    }

    /// One page of keys as the console lists them: pending first, then newest first.
    static func page<DB: SQLConnection>(_ db: DB, _ page: Paging) throws(StoreError) -> [RegisteredKey] {
        try db.rows(
            columns + """
                 ORDER BY CASE WHEN status = 'pending' THEN 0 ELSE 1 END, created DESC, kid LIMIT ?1 OFFSET ?2
                """, [.integer(Int64(page.limit)), .integer(Int64(page.offset))]
        ) { (row: DB.Row) throws(StoreError) in try key(row) }
    }

    /// Inserts `key` (pending or active) unless its kid is taken; whether it was inserted.
    static func insert(_ db: some SQLConnection, _ key: RegisteredKey) throws(StoreError) -> Bool {
        try db.execute(
            """
            INSERT INTO keys (kid, "user", host, jwk, status, created, kind, ek_sha256)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (kid) DO NOTHING
            """,
            [
                .text(key.kid), .text(key.user), .text(key.host), .text(JSONEncoding.encode(key.jwk.json)),
                .text(key.status == .pending ? "pending" : "active"), .integer(key.created), .text(key.kind.rawValue),
                .text(key.ek),
            ]) == 1
    }

    /// The statement that revokes an active or pending key (it stays, so that its kid can
    /// never be registered again).
    static func markRevoked(kid: String, now: Int64) -> SQLStatement {
        SQLStatement(
            "UPDATE keys SET status = 'revoked', revoked = ?2 WHERE kid = ?1 AND status <> 'revoked'",
            [.text(kid), .integer(now)])
    }

    static func revoke(_ db: some SQLConnection, kid: String, now: Int64) throws(StoreError) -> RevocationResult {
        if try db.run(markRevoked(kid: kid, now: now)) == 1 { return .revoked }
        return try key(db, kid: kid) == nil ? .unknown : .alreadyRevoked
    }

    /// Revokes every active or pending key of `user` and/or `host`; the keys revoked, oldest first.
    static func revoke<DB: SQLConnection>(_ db: DB, user: String?, host: String?, now: Int64) throws(StoreError)
        -> [RegisteredKey]
    {
        let keys = try db.rows(
            """
            UPDATE keys SET status = 'revoked', revoked = ?3
             WHERE status <> 'revoked' AND (CAST(?1 AS TEXT) IS NULL OR "user" = ?1) AND (CAST(?2 AS TEXT) IS NULL OR host = ?2)
            RETURNING kid, "user", host, jwk, status, created, kind, ek_sha256
            """, [.text(user), .text(host), .integer(now)]
        ) { (row: DB.Row) throws(StoreError) in try key(row) }
        return keys.sorted { ($0.created, $0.kid) < ($1.created, $1.kid) }
    }

    static func approve(_ db: some SQLConnection, kid: String) throws(StoreError) -> ApprovalResult {
        if try db.execute("UPDATE keys SET status = 'active' WHERE kid = ?1 AND status = 'pending'", [.text(kid)]) == 1
        {
            return .approved
        }
        switch try key(db, kid: kid)?.status {
        case nil: return .unknown
        case .revoked?: return .revoked
        case .active?, .pending?: return .alreadyActive
        }
    }

    /// How many keys are in each status; every status is present.
    static func counts<DB: SQLConnection>(_ db: DB) throws(StoreError) -> [(KeyStatus, Int64)] {
        var counts: [KeyStatus: Int64] = [:]
        try db.run(SQLStatement("SELECT status, count(*) FROM keys GROUP BY status")) {
            (row: DB.Row) throws(StoreError) in
            if let status = row.text(0).flatMap(KeyStatus.init(rawValue:)) { counts[status] = row.int64(1) ?? 0 }
        }
        return KeyStatus.allCases.map { ($0, counts[$0] ?? 0) }
    }

    /// The status of `kid` while it is registered to `user` and `host`; nil when it is not.
    static func status<DB: SQLConnection>(_ db: DB, kid: String, user: String, host: String) throws(StoreError)
        -> KeyStatus?
    {
        try db.first(
            #"SELECT status FROM keys WHERE kid = ?1 AND "user" = ?2 AND host = ?3"#,
            [.text(kid), .text(user), .text(host)]
        ) { (row: DB.Row) throws(StoreError) -> KeyStatus in
            guard let status = row.text(0).flatMap(KeyStatus.init(rawValue:)) else {
                throw StoreError("corrupt row in table keys")
            }
            return status
        }
    }

    /// Uses up `jti` until `keepUntil` (the replay table's primary key): false when it was
    /// used before.
    static func claim(_ db: some SQLConnection, jti: String, keepUntil: Int64) throws(StoreError) -> Bool {
        try db.execute(
            "INSERT INTO replay (jti, keep_until) VALUES (?1, ?2) ON CONFLICT (jti) DO NOTHING",
            [.text(jti), .integer(keepUntil)]) == 1
    }
}

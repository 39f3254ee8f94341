import FingerAuthDomain

/// Host enrollment tokens and OAuth access tokens, both stored as SHA-256 only (so a copy of
/// the database enrolls nothing and authenticates nobody), the same SQL on both stores.
enum TokenTables {
    static func create(_ db: some SQLConnection, digest: String, host: String, now: Int64) throws(StoreError) {
        try db.execute(
            "INSERT INTO host_tokens (sha256, host, created) VALUES (?1, ?2, ?3)",
            [.text(digest), .text(host), .integer(now)])
    }

    /// The host of the unrevoked token whose SHA-256 is `digest`.
    static func host<DB: SQLConnection>(_ db: DB, digest: String) throws(StoreError) -> String? {
        try db.first("SELECT host FROM host_tokens WHERE sha256 = ?1 AND revoked IS NULL", [.text(digest)]) {
            (row: DB.Row) throws(StoreError) -> String? in row.text(0)
        } ?? nil
    }

    /// Every host token, oldest first, by id.
    static func all<DB: SQLConnection>(_ db: DB) throws(StoreError) -> [HostTokenRecord] {
        try db.rows("SELECT sha256, host, created, revoked FROM host_tokens ORDER BY created, sha256") {
            (row: DB.Row) throws(StoreError) in
            HostTokenRecord(
                id: String((row.text(0) ?? "").prefix(HostToken.idLength)), host: row.text(1) ?? "",
                created: row.int64(2) ?? 0, revoked: row.int64(3))
        }
    }

    /// Revokes the unrevoked tokens whose id is `id` and/or whose host is `host`; the host of
    /// each token revoked.
    static func revoke<DB: SQLConnection>(_ db: DB, id: String?, host: String?, now: Int64) throws(StoreError)
        -> [String]
    {
        try db.rows(
            """
            UPDATE host_tokens SET revoked = ?3
             WHERE revoked IS NULL AND (CAST(?1 AS TEXT) IS NULL OR substr(sha256, 1, 16) = ?1)
               AND (CAST(?2 AS TEXT) IS NULL OR host = ?2)
            RETURNING host
            """, [.text(id), .text(host), .integer(now)]
        ) { (row: DB.Row) throws(StoreError) in row.text(0) }
        .compactMap { $0 }
    }

    /// The statement that stores an access token's SHA-256 for the key of `claim`.
    static func insertAccessToken(sha256: String, claim: TokenClaim, expires: Int64) -> SQLStatement {
        SQLStatement(
            #"INSERT INTO access_tokens (sha256, "user", host, kid, created, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"#,
            [
                .text(sha256), .text(claim.user), .text(claim.host), .text(claim.kid), .integer(claim.time),
                .integer(expires),
            ])
    }

    /// Deletes every access token of `host`; how many.
    static func deleteAccessTokens(_ db: some SQLConnection, host: String) throws(StoreError) -> Int {
        try db.execute("DELETE FROM access_tokens WHERE host = ?1", [.text(host)])
    }

    /// The access token whose SHA-256 (hex) is `sha256`, with its key's status now.
    static func accessToken<DB: SQLConnection>(_ db: DB, sha256: String) throws(StoreError) -> AccessTokenState? {
        try db.first(
            #"""
            SELECT a."user", a.host, a.kid, a.created, a.expires, k.status
              FROM access_tokens a LEFT JOIN keys k ON k.kid = a.kid WHERE a.sha256 = ?1
            """#, [.text(sha256)]
        ) { (row: DB.Row) throws(StoreError) in
            AccessTokenState(
                user: row.text(0) ?? "", host: row.text(1) ?? "", kid: row.text(2) ?? "",
                created: row.int64(3) ?? 0, expires: row.int64(4) ?? 0,
                keyStatus: row.text(5).flatMap(KeyStatus.init(rawValue:)))
        }
    }
}

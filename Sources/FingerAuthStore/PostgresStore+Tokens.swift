import FingerAuthDomain

/// Host enrollment tokens and OAuth access tokens, stored as SHA-256 only.
extension PostgresStore {
    public func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        guard let token = HostToken.generate(), let digest = HostToken.hash(token) else {
            throw StoreError("no random bytes for a token")
        }
        _ = try transaction { (db) throws(StoreError) in
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
                HostTokenRecord(id: String((result.text(row, 0) ?? "").prefix(SQLiteStore.tokenIDLength)),
                                host: result.text(row, 1) ?? "", created: result.int64(row, 2) ?? 0,
                                revoked: result.int64(row, 3))
            }
        }
    }

    public func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> HostRevocation {
        if let id, !HostToken.isTokenID(id) { return HostRevocation() }
        return try transaction { (db) throws(StoreError) -> HostRevocation in
            let result = try db.query("""
                UPDATE host_tokens SET revoked = $3
                WHERE revoked IS NULL AND ($1::text IS NULL OR substr(sha256, 1, 16) = $1::text)
                  AND ($2::text IS NULL OR host = $2::text)
                RETURNING host
                """, [.text(id), .text(host), .integer(now)])
            var revocation = HostRevocation(hosts: (0..<result.rows).compactMap { result.text($0, 0) })
            if let host {
                revocation.keys = try Self.revokeKeysLocked(db, user: nil, host: host, now: now)
                revocation.accessTokens = try db.query("DELETE FROM access_tokens WHERE host = $1", [.text(host)]).affected
            }
            return revocation
        }
    }

    public func accessToken(sha256: String) throws(StoreError) -> AccessTokenState? {
        try pool.withConnection { (db) throws(StoreError) -> AccessTokenState? in
            let result = try db.query(#"""
                SELECT a."user", a.host, a.kid, a.created, a.expires, k.status
                FROM access_tokens a LEFT JOIN keys k ON k.kid = a.kid WHERE a.sha256 = $1
                """#, [.text(sha256)])
            guard result.rows > 0 else { return nil }
            return AccessTokenState(user: result.text(0, 0) ?? "", host: result.text(0, 1) ?? "",
                                    kid: result.text(0, 2) ?? "", created: result.int64(0, 3) ?? 0,
                                    expires: result.int64(0, 4) ?? 0,
                                    keyStatus: result.text(0, 5).flatMap(KeyStatus.init(rawValue:)))
        }
    }
}

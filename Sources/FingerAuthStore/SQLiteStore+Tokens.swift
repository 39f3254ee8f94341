import FingerAuthCore
import FingerAuthDomain

/// Host enrollment tokens and OAuth access tokens: both stored as SHA-256 only, so a copy
/// of the database enrolls nothing and authenticates nobody.
extension SQLiteStore {
    /// Length of a host token id in `token list`.
    public static let tokenIDLength = 16

    /// Stores the hash of a new token for `host` and returns the token (shown once).
    public func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        guard let token = HostToken.generate(), let digest = HostToken.hash(token) else {
            throw StoreError("no random bytes for a token")
        }
        try write { (db) throws(StoreError) in
            try db.withStatement("INSERT INTO host_tokens (sha256, host, created) VALUES (?1, ?2, ?3)") {
                (insert) throws(StoreError) in
                try insert.bind(1, digest)
                try insert.bind(2, host)
                try insert.bind(3, now)
                try insert.run()
            }
        }
        return token
    }

    /// The host a presented token enrolls for, or nil (unknown, revoked or malformed).
    public func host(forToken token: String) throws(StoreError) -> String? {
        guard let digest = HostToken.hash(token) else { return nil }
        return try read { (db) throws(StoreError) -> String? in
            try db.withStatement("SELECT host FROM host_tokens WHERE sha256 = ?1 AND revoked IS NULL") {
                (stmt) throws(StoreError) -> String? in
                try stmt.bind(1, digest)
                return try stmt.step() ? stmt.text(0) : nil
            }
        }
    }

    /// Every host token, oldest first, by id.
    public func listHostTokens() throws(StoreError) -> [HostTokenRecord] {
        try read { (db) throws(StoreError) -> [HostTokenRecord] in
            try db.withStatement("SELECT sha256, host, created, revoked FROM host_tokens ORDER BY created, sha256") {
                (stmt) throws(StoreError) -> [HostTokenRecord] in
                var out: [HostTokenRecord] = []
                while try stmt.step() {
                    out.append(HostTokenRecord(id: String((stmt.text(0) ?? "").prefix(Self.tokenIDLength)),
                                               host: stmt.text(1) ?? "", created: stmt.int64(2) ?? 0,
                                               revoked: stmt.int64(3)))
                }
                return out
            }
        }
    }

    /// Revokes the unrevoked tokens whose id is `id` (a `token list` id, exactly) or, with
    /// `host`, every unrevoked token of that host together with the host's keys and its
    /// access tokens — one transaction, so no login of that host is accepted after it.
    public func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> HostRevocation {
        if let id, !HostToken.isTokenID(id) { return HostRevocation() }
        return try write { (db) throws(StoreError) -> HostRevocation in
            let found = try db.withStatement("""
                SELECT sha256, host FROM host_tokens
                WHERE revoked IS NULL AND (?1 IS NULL OR substr(sha256, 1, 16) = ?1) AND (?2 IS NULL OR host = ?2)
                """) { (select) throws(StoreError) -> [(String, String)] in
                try select.bind(1, id)
                try select.bind(2, host)
                var rows: [(String, String)] = []
                while try select.step() {
                    if let digest = select.text(0), let name = select.text(1) { rows.append((digest, name)) }
                }
                return rows
            }
            for (digest, _) in found {
                try db.withStatement("UPDATE host_tokens SET revoked = ?2 WHERE sha256 = ?1") { (update) throws(StoreError) in
                    try update.bind(1, digest)
                    try update.bind(2, now)
                    try update.run()
                }
            }
            var revocation = HostRevocation(hosts: found.map(\.1))
            if let host {
                revocation.keys = try Self.revokeKeysLocked(db, user: nil, host: host, now: now)
                revocation.accessTokens = try db.withStatement("DELETE FROM access_tokens WHERE host = ?1") {
                    (delete) throws(StoreError) -> Int in
                    try delete.bind(1, host)
                    try delete.run()
                    return db.changes
                }
            }
            return revocation
        }
    }

    /// The access token stored under `sha256`, with its key's status now.
    public func accessToken(sha256: String) throws(StoreError) -> AccessTokenState? {
        try read { (db) throws(StoreError) -> AccessTokenState? in
            try db.withStatement("""
                SELECT a.user, a.host, a.kid, a.created, a.expires, k.status
                FROM access_tokens a LEFT JOIN keys k ON k.kid = a.kid WHERE a.sha256 = ?1
                """) { (stmt) throws(StoreError) -> AccessTokenState? in
                try stmt.bind(1, sha256)
                guard try stmt.step() else { return nil }
                return AccessTokenState(user: stmt.text(0) ?? "", host: stmt.text(1) ?? "", kid: stmt.text(2) ?? "",
                                        created: stmt.int64(3) ?? 0, expires: stmt.int64(4) ?? 0,
                                        keyStatus: stmt.text(5).flatMap(KeyStatus.init(rawValue:)))
            }
        }
    }
}

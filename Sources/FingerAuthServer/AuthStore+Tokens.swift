import FingerAuthCore

/// A host enrollment token as `fingerauthd token list` shows it: never the token, only
/// a short id (the first 16 hex digits of its SHA-256) that `token revoke --id` takes.
public struct HostTokenRecord: Sendable, Equatable {
    public var id: String
    public var host: String
    public var created: Int64
    /// nil while the token is usable.
    public var revoked: Int64?
}

/// Host enrollment tokens and OAuth access tokens: both stored as SHA-256 only, so a copy
/// of the database enrolls nothing and authenticates nobody.
extension AuthStore {
    /// Length of a host token id in `token list`.
    public static let tokenIDLength = 16

    /// Stores the hash of a new token for `host` and returns the token (shown once).
    public func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        guard let token = HostToken.generate(), let digest = HostToken.hash(token) else {
            throw StoreError("no random bytes for a token")
        }
        try lock.withLock { () throws(StoreError) in
            let insert = try database.prepare("INSERT INTO host_tokens (sha256, host, created) VALUES (?1, ?2, ?3)")
            try insert.bind(1, digest)
            try insert.bind(2, host)
            try insert.bind(3, now)
            try insert.run()
        }
        return token
    }

    /// The host a presented token enrolls for, or nil (unknown, revoked or malformed).
    public func host(forToken token: String) throws(StoreError) -> String? {
        guard let digest = HostToken.hash(token) else { return nil }
        return try lock.withLock { () throws(StoreError) -> String? in
            let stmt = try database.prepare("SELECT host FROM host_tokens WHERE sha256 = ?1 AND revoked IS NULL")
            try stmt.bind(1, digest)
            return try stmt.step() ? stmt.text(0) : nil
        }
    }

    /// Every host token, oldest first, by id.
    public func listHostTokens() throws(StoreError) -> [HostTokenRecord] {
        try lock.withLock { () throws(StoreError) -> [HostTokenRecord] in
            let stmt = try database.prepare("SELECT sha256, host, created, revoked FROM host_tokens ORDER BY created, sha256")
            var out: [HostTokenRecord] = []
            while try stmt.step() {
                out.append(HostTokenRecord(id: String((stmt.text(0) ?? "").prefix(Self.tokenIDLength)),
                                           host: stmt.text(1) ?? "", created: stmt.int64(2) ?? 0,
                                           revoked: stmt.int64(3)))
            }
            return out
        }
    }

    /// Revokes the unrevoked tokens whose id is `id` (a `token list` id, exactly) or, with
    /// `host`, every unrevoked token of that host. Returns the hosts of the tokens revoked.
    public func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> [String] {
        try lock.withLock { () throws(StoreError) -> [String] in
            let select: SQLiteStatement
            if let id {
                guard id.utf8.count == Self.tokenIDLength,
                      id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return [] }
                select = try database.prepare("SELECT sha256, host FROM host_tokens WHERE substr(sha256, 1, 16) = ?1 AND revoked IS NULL")
                try select.bind(1, id)
            } else {
                select = try database.prepare("SELECT sha256, host FROM host_tokens WHERE host = ?1 AND revoked IS NULL")
                try select.bind(1, host)
            }
            var found: [(String, String)] = []
            while try select.step() {
                if let digest = select.text(0), let name = select.text(1) { found.append((digest, name)) }
            }
            for (digest, _) in found {
                let update = try database.prepare("UPDATE host_tokens SET revoked = ?2 WHERE sha256 = ?1")
                try update.bind(1, digest)
                try update.bind(2, now)
                try update.run()
            }
            return found.map(\.1)
        }
    }

    /// Stores the hash of an OAuth access token issued at `now` until `expires`, and
    /// forgets expired ones.
    public func storeAccessToken(sha256: String, user: String, host: String, kid: String,
                                 now: Int64, expires: Int64) throws(StoreError) {
        try lock.withLock { () throws(StoreError) in
            let purge = try database.prepare("DELETE FROM access_tokens WHERE expires < ?1")
            try purge.bind(1, now)
            try purge.run()
            let insert = try database.prepare("""
                INSERT INTO access_tokens (sha256, user, host, kid, created, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                """)
            try insert.bind(1, sha256)
            try insert.bind(2, user)
            try insert.bind(3, host)
            try insert.bind(4, kid)
            try insert.bind(5, now)
            try insert.bind(6, expires)
            try insert.run()
        }
    }
}

/// The registry's tables and their migrations, version kept in `PRAGMA user_version`.
///
/// Version 1 (the walking skeleton): keys active/revoked, host tokens, replay, audit.
/// Version 2: keys may be `pending` (`approval = manual`), OAuth access tokens (hash only),
/// and indexes for `fingerauthd audit --user/--since`.
enum AuthSchema {
    /// The version this fingerauthd writes.
    static let version: Int64 = 2

    /// Brings the database at `database` up to `version` in one transaction; refuses a
    /// newer schema.
    static func migrate(_ database: SQLiteDatabase) throws(StoreError) {
        let current = try userVersion(database)
        guard current <= version else {
            throw StoreError("database schema \(current) is newer than this fingerauthd (\(version))")
        }
        guard current < version else { return }
        try database.execute("BEGIN IMMEDIATE")
        do {
            if current == 1 { try database.execute(fromVersion1) }
            try database.execute(tables)
            try database.execute("PRAGMA user_version = \(version)")
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    /// `PRAGMA user_version`; the statement is finalized on return (a live statement would
    /// keep the schema locked for DROP TABLE).
    private static func userVersion(_ database: SQLiteDatabase) throws(StoreError) -> Int64 {
        let stmt = try database.prepare("PRAGMA user_version")
        return try stmt.step() ? (stmt.int64(0) ?? 0) : 0
    }

    /// Version 1's `keys` had a CHECK without `pending`: SQLite cannot alter a CHECK, so the
    /// table is rebuilt (https://www.sqlite.org/lang_altertable.html, "other changes").
    private static let fromVersion1 = """
        CREATE TABLE keys_v2 (
            kid TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            host TEXT NOT NULL,
            jwk TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'pending', 'revoked')),
            created INTEGER NOT NULL,
            revoked INTEGER
        );
        INSERT INTO keys_v2 SELECT kid, user, host, jwk, status, created, revoked FROM keys;
        DROP TABLE keys;
        ALTER TABLE keys_v2 RENAME TO keys;
        """

    private static let tables = """
        CREATE TABLE IF NOT EXISTS keys (
            kid TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            host TEXT NOT NULL,
            jwk TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'pending', 'revoked')),
            created INTEGER NOT NULL,
            revoked INTEGER
        );
        CREATE INDEX IF NOT EXISTS keys_user ON keys (user);
        CREATE TABLE IF NOT EXISTS host_tokens (
            sha256 TEXT PRIMARY KEY NOT NULL,
            host TEXT NOT NULL,
            created INTEGER NOT NULL,
            revoked INTEGER
        );
        CREATE TABLE IF NOT EXISTS replay (
            jti TEXT PRIMARY KEY NOT NULL,
            exp INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS replay_exp ON replay (exp);
        CREATE TABLE IF NOT EXISTS access_tokens (
            sha256 TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            host TEXT NOT NULL,
            kid TEXT NOT NULL,
            created INTEGER NOT NULL,
            expires INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS access_tokens_expires ON access_tokens (expires);
        CREATE TABLE IF NOT EXISTS audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            time INTEGER NOT NULL,
            event TEXT NOT NULL,
            user TEXT,
            host TEXT,
            kid TEXT,
            jti TEXT,
            outcome TEXT NOT NULL,
            reason TEXT,
            peer TEXT
        );
        CREATE INDEX IF NOT EXISTS audit_time ON audit (time);
        CREATE INDEX IF NOT EXISTS audit_user ON audit (user, time);
        """
}

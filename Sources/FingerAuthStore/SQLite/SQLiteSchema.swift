import FingerAuthDomain

/// The registry's tables in SQLite and their migrations, version kept in `PRAGMA user_version`.
///
/// Version 1 (the walking skeleton): keys active/revoked, host tokens, replay, audit.
/// Version 2: keys may be `pending` (`approval = manual`), OAuth access tokens (hash only),
/// and indexes for `fingerauthd audit --user/--since`.
/// Version 3: the replay table keeps each jti until a time fixed at acceptance
/// (`keep_until`, the fleet's one replay window); audit rows say whether the request was
/// verified, whom an unverified one only claimed to be, and how many refused requests a
/// `refusals` row stands for; keys are found by host for bulk revocation.
/// Versions 4 to 14: see each migration below; 15: who asked for an approval
/// (`ApprovalTables.callerColumn`).
enum SQLiteSchema {
    /// The version this fingerauthd writes.
    static let version: Int64 = 15

    /// Brings `database` up to `version` in one transaction; refuses a newer schema.
    static func migrate(_ database: SQLiteDatabase) throws(StoreError) {
        let current = try database.integer("PRAGMA user_version") ?? 0
        guard current <= version else {
            throw StoreError("database schema \(current) is newer than this fingerauthd (\(version))")
        }
        guard current < version else { return }
        try database.transaction { () throws(StoreError) in
            if current == 1 { try database.execute(fromVersion1) }
            if current < 2 { try database.execute(version2Tables) }
            if current < 3 { try database.execute(fromVersion2) }
            if current < 4 { try database.execute(fromVersion3) }
            if current < 5 { try database.execute(fromVersion4) }
            if current < 6 { try database.execute(fromVersion5) }
            if current < 7 { try database.execute(fromVersion6) }
            if current < 8 { try database.execute(fromVersion7) }
            if current < 9 { try database.execute(fromVersion8) }
            if current < 10 { try database.execute(fromVersion9) }
            if current < 11 { try database.execute(fromVersion10) }
            if current < 12 { try database.execute(fromVersion11) }
            if current < 13 { try database.execute(fromVersion12) }
            if current < 14 { try database.execute(fromVersion13) }
            try database.execute(ApprovalTables.callerColumn)
            try database.execute("PRAGMA user_version = \(version)")
        }
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

    /// Every table as version 2 had it (a new database starts here, then takes version 3).
    private static let version2Tables = """
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

    /// Version 3. Rows of version 2 kept their jti until `exp` plus the skew of the
    /// instance that pruned; they get the fleet's window (`exp` + the largest skew).
    private static let fromVersion2 = """
        ALTER TABLE replay RENAME COLUMN exp TO keep_until;
        UPDATE replay SET keep_until = keep_until + \(ReplayWindow.maxSkew);
        DROP INDEX IF EXISTS replay_exp;
        CREATE INDEX replay_keep_until ON replay (keep_until);
        ALTER TABLE audit ADD COLUMN claimed_user TEXT;
        ALTER TABLE audit ADD COLUMN verified INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE audit ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
        CREATE INDEX audit_unverified ON audit (time) WHERE verified = 0;
        CREATE UNIQUE INDEX audit_refusals ON audit (peer, time) WHERE event = 'refusals';
        CREATE INDEX keys_host ON keys (host);
        CREATE INDEX access_tokens_host ON access_tokens (host);
        """

    /// 4: the central policy — ordered rules, host labels, user lists — and the rule an
    /// audit row names.
    private static let fromVersion3 = """
        CREATE TABLE policy_rules (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            position INTEGER NOT NULL,
            stage TEXT NOT NULL CHECK (stage IN ('registration', 'login')),
            users TEXT NOT NULL,
            hosts TEXT NOT NULL,
            services TEXT NOT NULL,
            key_kind TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ('allow', 'deny', 'require-hardware-key')),
            created INTEGER NOT NULL
        );
        CREATE TABLE host_labels (
            host TEXT NOT NULL,
            label TEXT NOT NULL,
            PRIMARY KEY (host, label)
        ) WITHOUT ROWID;
        CREATE TABLE user_lists (
            list TEXT NOT NULL,
            "user" TEXT NOT NULL,
            PRIMARY KEY (list, "user")
        ) WITHOUT ROWID;
        CREATE INDEX user_lists_user ON user_lists ("user");
        ALTER TABLE audit ADD COLUMN rule INTEGER;
        """

    /// 5: where each key lives (`software`, or `attested-tpm` after TPM key attestation).
    private static let fromVersion4 = """
        ALTER TABLE keys ADD COLUMN kind TEXT NOT NULL DEFAULT 'software' CHECK (kind IN ('software', 'attested-tpm'));
        """

    /// 6: TPM credential-activation challenges, shared by whatever reads this database.
    private static let fromVersion5 = """
        CREATE TABLE attestation_challenges (
            id TEXT PRIMARY KEY NOT NULL,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            ak_public TEXT NOT NULL,
            secret_sha256 TEXT NOT NULL,
            nonce TEXT NOT NULL,
            expires INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    /// Version 7: the admin console's accounts, and the admin who took an audited action.
    /// The console's reads come from indexes alone: `audit_time` covers the logins per hour
    /// (event, outcome, count), `audit_deny_time` the refusal reasons (the refusals only, a
    /// fraction of the rows; `outcome` in it too, as SQLite takes an index as covering only
    /// when it holds every column the query names). Each key's last login is read through
    /// `audit_user` instead of an index of its own, which would add a write to every
    /// accepted login (with one, section 4 of `make bench` lost in each of four alternating
    /// pairs at 8 clients, 3,704 against 4,541 logins/s on average).
    private static let fromVersion6 = """
        CREATE TABLE admins (
            name TEXT PRIMARY KEY NOT NULL,
            password_hash TEXT,
            setup_sha256 TEXT,
            setup_expires INTEGER,
            created INTEGER NOT NULL
        ) WITHOUT ROWID;
        ALTER TABLE audit ADD COLUMN admin TEXT;
        DROP INDEX IF EXISTS audit_time;
        CREATE INDEX audit_time ON audit (time, event, outcome, count);
        CREATE INDEX audit_deny_time ON audit (time, reason, count, outcome) WHERE outcome = 'deny';
        """

    /// Version 8: a login row's `service` claim, and the `client_service` an agent's client
    /// named (untrusted: the client chose it).
    private static let fromVersion7 = """
        ALTER TABLE audit ADD COLUMN service TEXT;
        ALTER TABLE audit ADD COLUMN client_service TEXT;
        """

    /// Version 9: each host's pinned TPM endorsement key (`host_eks`, `EKPins`), the EK that
    /// attested each key and each open challenge, the policy action `require-provisioned-ek`
    /// (SQLite cannot alter a CHECK: the rules table is rebuilt, its AUTOINCREMENT counter
    /// carried over so that no rule id is ever reused), and `audit_user` over (user, kid,
    /// event, outcome, time): each key's last login is then one seek, however many rows its
    /// user has, with no index of its own (the same one entry per row as before, wider).
    private static let fromVersion8 = """
        CREATE TABLE host_eks (
            host TEXT PRIMARY KEY NOT NULL,
            ek_sha256 TEXT NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('tofu', 'admin')),
            pinned INTEGER NOT NULL,
            pinned_by TEXT
        ) WITHOUT ROWID;
        ALTER TABLE keys ADD COLUMN ek_sha256 TEXT;
        DELETE FROM attestation_challenges;
        ALTER TABLE attestation_challenges ADD COLUMN ek_sha256 TEXT NOT NULL DEFAULT '';
        ALTER TABLE policy_rules RENAME TO policy_rules_v7;
        CREATE TABLE policy_rules (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            position INTEGER NOT NULL,
            stage TEXT NOT NULL CHECK (stage IN ('registration', 'login')),
            users TEXT NOT NULL,
            hosts TEXT NOT NULL,
            services TEXT NOT NULL,
            key_kind TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ('allow', 'deny', 'require-hardware-key', 'require-provisioned-ek')),
            created INTEGER NOT NULL
        );
        INSERT INTO policy_rules (id, position, stage, users, hosts, services, key_kind, action, created)
            SELECT id, position, stage, users, hosts, services, key_kind, action, created FROM policy_rules_v7;
        UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'policy_rules_v7'), 0))
            WHERE name = 'policy_rules';
        INSERT INTO sqlite_sequence (name, seq) SELECT 'policy_rules', seq FROM sqlite_sequence
            WHERE name = 'policy_rules_v7' AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'policy_rules');
        DROP TABLE policy_rules_v7;
        DROP INDEX IF EXISTS audit_user;
        CREATE INDEX audit_user ON audit (user, kid, event, outcome, time);
        """

    /// Version 10: a verified login's times as its helper reported them (`LoginStageReport`),
    /// for the console's percentiles per host; nobody vouches for them.
    private static let fromVersion9 = """
        ALTER TABLE audit ADD COLUMN ready_ms INTEGER;
        ALTER TABLE audit ADD COLUMN match_ms INTEGER;
        ALTER TABLE audit ADD COLUMN connect_ms INTEGER;
        """

    /// Version 11: offline grants — the policy's `offline` stage and each rule's limits
    /// (the stage's CHECK means a rebuild, as in version 8), the grants issued, and the last
    /// offline record held of each key.
    private static let fromVersion10 = """
        ALTER TABLE policy_rules RENAME TO policy_rules_v10;
        CREATE TABLE policy_rules (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            position INTEGER NOT NULL,
            stage TEXT NOT NULL CHECK (stage IN ('registration', 'login', 'offline')),
            users TEXT NOT NULL,
            hosts TEXT NOT NULL,
            services TEXT NOT NULL,
            key_kind TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ('allow', 'deny', 'require-hardware-key', 'require-provisioned-ek')),
            created INTEGER NOT NULL,
            offline_limits TEXT
        );
        INSERT INTO policy_rules (id, position, stage, users, hosts, services, key_kind, action, created)
            SELECT id, position, stage, users, hosts, services, key_kind, action, created FROM policy_rules_v10;
        UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'policy_rules_v10'), 0))
            WHERE name = 'policy_rules';
        INSERT INTO sqlite_sequence (name, seq) SELECT 'policy_rules', seq FROM sqlite_sequence
            WHERE name = 'policy_rules_v10' AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'policy_rules');
        DROP TABLE policy_rules_v10;
        \(OfflineTables.schema(integer: "INTEGER"))
        """

    /// Version 12 (`OfflineTables.fromVersion11`): an offline record's claimed time beside
    /// its row's receipt time, and each grant's uses reported so far.
    private static let fromVersion11 = OfflineTables.fromVersion11(integer: "INTEGER")

    /// Version 13: the hosts' own keys (`HostKeyTables`), that sign their approval requests.
    private static let fromVersion12 = HostKeyTables.schema(integer: "INTEGER")

    /// Version 14 (`ApprovalTables.schema`): remote approvals, the approval, client address
    /// and workstation an audit row names, and the policy's `approve` stage (its CHECK means
    /// a rebuild, as in version 11).
    private static let fromVersion13 =
        ApprovalTables.schema(integer: "INTEGER") + """
            ALTER TABLE policy_rules RENAME TO policy_rules_v13;
            CREATE TABLE policy_rules (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                position INTEGER NOT NULL,
                stage TEXT NOT NULL CHECK (stage IN ('registration', 'login', 'offline', 'approve')),
                users TEXT NOT NULL,
                hosts TEXT NOT NULL,
                services TEXT NOT NULL,
                key_kind TEXT NOT NULL,
                action TEXT NOT NULL CHECK (action IN ('allow', 'deny', 'require-hardware-key', 'require-provisioned-ek')),
                created INTEGER NOT NULL,
                offline_limits TEXT
            );
            INSERT INTO policy_rules (id, position, stage, users, hosts, services, key_kind, action, created, offline_limits)
                SELECT id, position, stage, users, hosts, services, key_kind, action, created, offline_limits
                FROM policy_rules_v13;
            UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'policy_rules_v13'), 0))
                WHERE name = 'policy_rules';
            INSERT INTO sqlite_sequence (name, seq) SELECT 'policy_rules', seq FROM sqlite_sequence
                WHERE name = 'policy_rules_v13' AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'policy_rules');
            DROP TABLE policy_rules_v13;
            """
}

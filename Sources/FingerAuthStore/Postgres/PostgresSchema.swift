import FingerAuthDomain

/// The registry's tables on PostgreSQL and their versioned migrations. The applied
/// version is the highest row of `fingerauthd_schema`. Migrations run in one transaction
/// under an advisory lock, so that instances starting together migrate once; a database
/// newer than this fingerauthd is refused.
///
/// Version 1 holds what SQLite's version 2 holds: keys (active, pending, revoked), host
/// tokens, replay, OAuth access tokens (hash only), audit. `user` and `time` are quoted:
/// `user` is a reserved word in PostgreSQL. Version 2 adds `rate_counters`, the failure
/// counts of the rate limits that every instance shares. Version 3 is SQLite's version 3.
enum PostgresSchema {
    /// Migration N brings the schema from version N-1 to N; append, never edit.
    static let migrations: [String] = [
        """
        CREATE TABLE keys (
            kid TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            jwk TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'pending', 'revoked')),
            created BIGINT NOT NULL,
            revoked BIGINT
        );
        CREATE INDEX keys_user ON keys ("user");
        CREATE TABLE host_tokens (
            sha256 TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            created BIGINT NOT NULL,
            revoked BIGINT
        );
        CREATE TABLE replay (
            jti TEXT PRIMARY KEY,
            exp BIGINT NOT NULL
        );
        CREATE INDEX replay_exp ON replay (exp);
        CREATE TABLE access_tokens (
            sha256 TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            kid TEXT NOT NULL,
            created BIGINT NOT NULL,
            expires BIGINT NOT NULL
        );
        CREATE INDEX access_tokens_expires ON access_tokens (expires);
        CREATE TABLE audit (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            "time" BIGINT NOT NULL,
            event TEXT NOT NULL,
            "user" TEXT,
            host TEXT,
            kid TEXT,
            jti TEXT,
            outcome TEXT NOT NULL,
            reason TEXT,
            peer TEXT
        );
        CREATE INDEX audit_time ON audit ("time");
        CREATE INDEX audit_user ON audit ("user", "time");
        """,
        // 2: the failure rate limits, counted for every instance (key: "user:…", "address:…").
        """
        CREATE TABLE rate_counters (
            key TEXT PRIMARY KEY,
            window_start BIGINT NOT NULL,
            expires BIGINT NOT NULL,
            count INTEGER NOT NULL
        );
        CREATE INDEX rate_counters_expires ON rate_counters (expires);
        """,
        // 3: the fleet's one replay window (keep_until fixed at acceptance), audit rows that
        // say whether the request was verified, whom an unverified one only claimed to be and
        // how many refused requests a `refusals` row stands for; keys found by host.
        """
        ALTER TABLE replay RENAME COLUMN exp TO keep_until;
        UPDATE replay SET keep_until = keep_until + \(ReplayWindow.maxSkew);
        ALTER INDEX replay_exp RENAME TO replay_keep_until;
        ALTER TABLE audit ADD COLUMN claimed_user TEXT,
            ADD COLUMN verified BOOLEAN NOT NULL DEFAULT true,
            ADD COLUMN count BIGINT NOT NULL DEFAULT 1;
        CREATE INDEX audit_unverified ON audit ("time") WHERE NOT verified;
        CREATE UNIQUE INDEX audit_refusals ON audit (peer, "time") WHERE event = 'refusals';
        CREATE INDEX keys_host ON keys (host);
        CREATE INDEX access_tokens_host ON access_tokens (host);
        """,
        // 4: the central policy (ordered rules, host labels, user lists), shared by every
        // instance; the rule an audit row names.
        """
        CREATE TABLE policy_rules (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            position INTEGER NOT NULL,
            stage TEXT NOT NULL CHECK (stage IN ('registration', 'login')),
            users TEXT NOT NULL,
            hosts TEXT NOT NULL,
            services TEXT NOT NULL,
            key_kind TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ('allow', 'deny', 'require-hardware-key')),
            created BIGINT NOT NULL
        );
        CREATE TABLE host_labels (
            host TEXT NOT NULL,
            label TEXT NOT NULL,
            PRIMARY KEY (host, label)
        );
        CREATE TABLE user_lists (
            list TEXT NOT NULL,
            "user" TEXT NOT NULL,
            PRIMARY KEY (list, "user")
        );
        CREATE INDEX user_lists_user ON user_lists ("user");
        ALTER TABLE audit ADD COLUMN rule BIGINT;
        """,
        // 5: where each key lives (`software`, or `attested-tpm` after TPM key attestation).
        """
        ALTER TABLE keys ADD COLUMN kind TEXT NOT NULL DEFAULT 'software' CHECK (kind IN ('software', 'attested-tpm'));
        """,
        // 6: TPM credential-activation challenges, shared by every instance.
        """
        CREATE TABLE attestation_challenges (
            id TEXT PRIMARY KEY NOT NULL,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            ak_public TEXT NOT NULL,
            secret_sha256 TEXT NOT NULL,
            nonce TEXT NOT NULL,
            expires BIGINT NOT NULL
        );
        """,
        // 7: the admin console's accounts, the admin who took an audited action, and the
        // indexes the console reads from alone (as in SQLiteSchema's version 7).
        """
        CREATE TABLE admins (
            name TEXT PRIMARY KEY NOT NULL,
            password_hash TEXT,
            setup_sha256 TEXT,
            setup_expires BIGINT,
            created BIGINT NOT NULL
        );
        ALTER TABLE audit ADD COLUMN admin TEXT;
        DROP INDEX IF EXISTS audit_time;
        CREATE INDEX audit_time ON audit ("time") INCLUDE (event, outcome, count);
        CREATE INDEX audit_deny_time ON audit ("time") INCLUDE (reason, count) WHERE outcome = 'deny';
        """,
        // 8: a login row's `service` claim, and the `client_service` an agent's client named
        // (untrusted: the client chose it).
        """
        ALTER TABLE audit ADD COLUMN service TEXT, ADD COLUMN client_service TEXT;
        """,
        // 9: each host's pinned TPM endorsement key, the EK that attested each key and each
        // open challenge, the policy action `require-provisioned-ek`, and `audit_user` over
        // (user, kid, event, outcome, time) for each key's last login (as SQLiteSchema's 9).
        """
        CREATE TABLE host_eks (
            host TEXT PRIMARY KEY,
            ek_sha256 TEXT NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('tofu', 'admin')),
            pinned BIGINT NOT NULL,
            pinned_by TEXT
        );
        ALTER TABLE keys ADD COLUMN ek_sha256 TEXT;
        DELETE FROM attestation_challenges;
        ALTER TABLE attestation_challenges ADD COLUMN ek_sha256 TEXT NOT NULL DEFAULT '';
        ALTER TABLE policy_rules DROP CONSTRAINT policy_rules_action_check,
            ADD CONSTRAINT policy_rules_action_check
            CHECK (action IN ('allow', 'deny', 'require-hardware-key', 'require-provisioned-ek'));
        DROP INDEX IF EXISTS audit_user;
        CREATE INDEX audit_user ON audit ("user", kid, event, outcome, "time");
        """,
        // 10: a verified login's times as its helper reported them (as SQLiteSchema's 10).
        """
        ALTER TABLE audit ADD COLUMN ready_ms BIGINT, ADD COLUMN match_ms BIGINT, ADD COLUMN connect_ms BIGINT;
        """,
        // 11: offline grants (as SQLiteSchema's 11).
        """
        ALTER TABLE policy_rules DROP CONSTRAINT policy_rules_stage_check,
            ADD CONSTRAINT policy_rules_stage_check CHECK (stage IN ('registration', 'login', 'offline')),
            ADD COLUMN offline_limits TEXT;
        \(OfflineTables.schema(integer: "BIGINT"))
        """,
        // 12: an offline record's claimed time and each grant's uses so far (as SQLiteSchema's 12).
        OfflineTables.fromVersion11(integer: "BIGINT"),
        // 13: the hosts' own keys (as SQLiteSchema's 13).
        HostKeyTables.schema(integer: "BIGINT"),
        // 14: remote approvals, the approval, client address and workstation an audit row
        // names, and the policy's `approve` stage (as SQLiteSchema's 14).
        ApprovalTables.schema(integer: "BIGINT")
            + """
            ALTER TABLE policy_rules DROP CONSTRAINT policy_rules_stage_check,
                ADD CONSTRAINT policy_rules_stage_check
                CHECK (stage IN ('registration', 'login', 'offline', 'approve'));
            """,
        // 15: who asked for an approval, when not the user (as SQLiteSchema's 15).
        ApprovalTables.callerColumn,
    ]

    /// The version this fingerauthd writes.
    static var version: Int { migrations.count }

    /// Arbitrary key of the advisory lock that serializes migrations across instances.
    static let lockKey = 0x4641_5344

    static func migrate(_ db: PostgresConnection) throws(StoreError) {
        try db.execute("BEGIN")
        do throws(StoreError) {
            try db.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
            try db.execute(
                "CREATE TABLE IF NOT EXISTS fingerauthd_schema (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)")
            let current =
                Int(try db.execute("SELECT coalesce(max(version), 0) FROM fingerauthd_schema").text(0, 0) ?? "") ?? 0
            guard current <= version else {
                throw StoreError("database schema \(current) is newer than this fingerauthd (\(version))")
            }
            for next in (current + 1)..<(version + 1) where next >= 1 {
                try db.execute(migrations[next - 1])
                try db.execute(
                    "INSERT INTO fingerauthd_schema (version, applied) VALUES (\(next), extract(epoch from now())::bigint)"
                )
            }
            try db.execute("COMMIT")
        } catch {
            _ = try? db.execute("ROLLBACK")
            throw error
        }
    }
}

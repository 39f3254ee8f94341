import FingerAuthCore
import FingerAuthDomain

/// The hosts' own keys (`host_keys`), the same SQL on both stores: what signs a host's
/// approval requests. Never read by the login's verifier, which looks in `keys` only.
enum HostKeyTables {
    /// The table and its index, in either schema (`integer`: the dialect's type for times).
    static func schema(integer: String) -> String {
        """
        CREATE TABLE host_keys (
            kid TEXT PRIMARY KEY NOT NULL,
            host TEXT NOT NULL,
            jwk TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
            created \(integer) NOT NULL,
            revoked \(integer),
            kind TEXT NOT NULL DEFAULT 'software',
            ek_sha256 TEXT
        );
        CREATE INDEX host_keys_host ON host_keys (host, status);
        """
    }

    static let columns = "SELECT kid, host, jwk, status, created, revoked, kind, ek_sha256 FROM host_keys"
    static let returning = "RETURNING kid, host, jwk, status, created, revoked, kind, ek_sha256"

    /// The host key in a row of `columns` (or of `returning`).
    static func key(_ row: some SQLRow) throws(StoreError) -> RegisteredHostKey {
        guard let kid = row.text(0), let host = row.text(1), let jwkText = row.text(2),
            let status = row.text(3).flatMap(KeyStatus.init(rawValue:)),
            let json = try? JSONParser(maxBytes: 16 * 1024, maxDepth: 4).parse(jwkText),
            let jwk = JWK(json: json), let kind = row.text(6).flatMap(KeyOrigin.init(rawValue:))
        else {
            throw StoreError("corrupt row in table host_keys")
        }
        return RegisteredHostKey(
            kid: kid, host: host, jwk: jwk, status: status, created: row.int64(4) ?? 0, revoked: row.int64(5),
            kind: kind, ek: row.text(7))
    }

    /// The host key stored under `kid`, in any status.
    static func key<DB: SQLConnection>(_ db: DB, kid: String) throws(StoreError) -> RegisteredHostKey? {
        try db.first(columns + " WHERE kid = ?1", [.text(kid)]) { (row: DB.Row) throws(StoreError) in try key(row) }
    }

    /// Every host key (of `host` when given), newest first.
    static func all<DB: SQLConnection>(_ db: DB, host: String?) throws(StoreError) -> [RegisteredHostKey] {
        try db.rows(
            columns + " WHERE CAST(?1 AS TEXT) IS NULL OR host = ?1 ORDER BY created DESC, kid", [.text(host)]
        ) { (row: DB.Row) throws(StoreError) in try key(row) }
    }

    /// Inserts `key` (active) unless its kid is taken; whether it was inserted.
    static func insert(_ db: some SQLConnection, _ key: RegisteredHostKey) throws(StoreError) -> Bool {
        try db.execute(
            """
            INSERT INTO host_keys (kid, host, jwk, status, created, kind, ek_sha256)
            VALUES (?1, ?2, ?3, 'active', ?4, ?5, ?6) ON CONFLICT (kid) DO NOTHING
            """,
            [
                .text(key.kid), .text(key.host), .text(JSONEncoding.encode(key.jwk.json)), .integer(key.created),
                .text(key.kind.rawValue), .text(key.ek),
            ]) == 1
    }

    /// Revokes host key `kid` and/or every active host key of `host` (at least one given);
    /// the keys revoked, oldest first.
    static func revoke<DB: SQLConnection>(_ db: DB, kid: String?, host: String?, now: Int64) throws(StoreError)
        -> [RegisteredHostKey]
    {
        guard kid != nil || host != nil else { return [] }
        let keys = try db.rows(
            """
            UPDATE host_keys SET status = 'revoked', revoked = ?3
             WHERE status = 'active' AND (CAST(?1 AS TEXT) IS NULL OR kid = ?1) AND (CAST(?2 AS TEXT) IS NULL OR host = ?2)
            """ + returning, [.text(kid), .text(host), .integer(now)]
        ) { (row: DB.Row) throws(StoreError) in try key(row) }
        return keys.sorted { ($0.created, $0.kid) < ($1.created, $1.kid) }
    }
}

/// What registering a host key does, the same on both stores, inside the store's one
/// transaction (serialised per host, so that two registrations cannot leave two active keys):
///
/// 1. The kid already a host key of the same host, active: `alreadyRegistered`, nothing
///    written (no audit row, no replay row). Another host's kid, or a revoked one, is
///    refused (`conflict`, `revoked`); so is a user's device key's kid (`conflict`).
/// 2. The proof's jti used up (`proofReplayed` when seen before).
/// 3. An attested key's EK checked against its host's pin, pinning it on first use
///    (`ekMismatch`; a new pin writes its own `ek_pin` audit row), as a device key's.
/// 4. The host's other active host key revoked, with its `host_key_revoke` row.
/// 5. The key inserted (`created`).
///
/// Every outcome but `alreadyRegistered` writes the registration's audit row.
enum HostKeyTransaction {
    static func run(
        _ db: some SQLConnection, _ key: RegisteredHostKey, proofJTI: String, keepUntil: Int64, audit row: AuditEvent,
        now: Int64
    ) throws(StoreError) -> HostKeyRegistration {
        func done(_ result: HostKeyRegistration) throws(StoreError) -> HostKeyRegistration {
            if result != .alreadyRegistered { try AuditTables.insert(db, result.audit(row), time: now) }
            return result
        }
        if let found = try HostKeyTables.key(db, kid: key.kid) {
            return try done(HostKeyRegistration.existing(found, for: key))
        }
        if try KeyTables.key(db, kid: key.kid) != nil { return try done(.conflict) }
        guard try KeyTables.claim(db, jti: proofJTI, keepUntil: keepUntil) else { return try done(.proofReplayed) }
        if let ek = key.ek {
            var registration = row
            registration.kid = key.kid
            guard try EKTables.admits(db, host: key.host, ek: ek, registration: registration, now: now) else {
                return try done(.ekMismatch)
            }
        }
        for replaced in try HostKeyTables.revoke(db, kid: nil, host: key.host, now: now) {
            try AuditTables.insert(db, replaced.replacedAudit(peer: row.peer), time: now)
        }
        if try !HostKeyTables.insert(db, key), let raced = try HostKeyTables.key(db, kid: key.kid) {
            return try done(HostKeyRegistration.existing(raced, for: key))
        }
        return try done(.created)
    }
}

import FingerAuthCore
import FingerAuthDomain

/// What registering a key does, the same on both stores, inside the store's one
/// transaction:
///
/// 1. The kid already registered to the same user and host, active or pending: answered
///    `alreadyRegistered` and nothing written — no audit row, no replay row — so that a
///    host sending the same key again and again fills no table. Another user's or host's
///    kid, or a revoked one, is refused (`conflict`, `revoked`).
/// 2. The proof's jti used up (`proofReplayed` when seen before).
/// 3. At most `keyLimit` active or pending keys per user and host (`tooManyKeys`).
/// 4. An attested key's EK checked against its host's pin, pinning it on first use
///    (`ekMismatch`; a new pin writes its own `ek_pin` audit row).
/// 5. The key inserted (`created`).
///
/// Every outcome but `alreadyRegistered` writes the registration's audit row.
enum RegistrationTransaction {
    static func run(
        _ db: some SQLConnection, _ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit row: AuditEvent,
        keyLimit: Int, now: Int64
    ) throws(StoreError) -> RegistrationResult {
        func done(_ result: RegistrationResult) throws(StoreError) -> RegistrationResult {
            if result != .alreadyRegistered {
                try AuditTables.insert(db, Registration.audit(row, result: result, status: key.status), time: now)
            }
            return result
        }
        if let found = try KeyTables.key(db, kid: key.kid) { return try done(Registration.existing(found, for: key)) }
        guard try KeyTables.claim(db, jti: proofJTI, keepUntil: keepUntil) else { return try done(.proofReplayed) }
        if keyLimit > 0 {
            let held = try db.textRows(
                """
                SELECT CAST(COUNT(*) AS TEXT) FROM keys WHERE "user" = ?1 AND host = ?2 AND status <> 'revoked'
                """, [key.user, key.host])
            guard let count = held.first?.first.flatMap({ $0 }).flatMap({ Int($0) }) else {
                throw StoreError("corrupt key count")
            }
            if count >= keyLimit { return try done(.tooManyKeys) }
        }
        if let ek = key.ek, try !EKTables.admits(db, host: key.host, ek: ek, registration: row, now: now) {
            return try done(.ekMismatch)
        }
        if try !KeyTables.insert(db, key), let raced = try KeyTables.key(db, kid: key.kid) {
            return try done(Registration.existing(raced, for: key))
        }
        return try done(.created)
    }
}

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
    /// The store's own statements for the steps above.
    struct Steps {
        /// The key registered under the new key's kid, if any.
        let existing: () throws(StoreError) -> RegisteredKey?
        /// Uses up the proof's jti; false when it was used before.
        let claim: () throws(StoreError) -> Bool
        /// Inserts the key; nil when inserted, else the key another transaction inserted first.
        let insert: () throws(StoreError) -> RegisteredKey?
        /// Writes an audit row in the transaction.
        let audit: (AuditEvent) throws(StoreError) -> Void
    }

    static func run(_ db: some PolicySQL, _ key: RegisteredKey, audit row: AuditEvent, keyLimit: Int, now: Int64,
                    _ steps: Steps) throws(StoreError) -> RegistrationResult {
        func done(_ result: RegistrationResult) throws(StoreError) -> RegistrationResult {
            if result != .alreadyRegistered { try steps.audit(Registration.audit(row, result: result, status: key.status)) }
            return result
        }
        if let found = try steps.existing() { return try done(Registration.existing(found, for: key)) }
        guard try steps.claim() else { return try done(.proofReplayed) }
        if keyLimit > 0 {
            let held = try db.policyRows("""
                SELECT CAST(COUNT(*) AS TEXT) FROM keys WHERE "user" = ?1 AND host = ?2 AND status <> 'revoked'
                """, [key.user, key.host])
            guard let count = held.first?.first.flatMap({ $0 }).flatMap({ Int($0) }) else {
                throw StoreError("corrupt key count")
            }
            if count >= keyLimit { return try done(.tooManyKeys) }
        }
        if let ek = key.ek {
            let (pin, created) = try EKTables.pinOnFirstUse(db, host: key.host, ek: ek, now: now)
            guard pin.ek == ek else { return try done(.ekMismatch) }
            if created { try steps.audit(EKPinResult.firstUseAudit(pin, registration: row)) }
        }
        if let raced = try steps.insert() { return try done(Registration.existing(raced, for: key)) }
        return try done(.created)
    }
}

import FingerAuthCore

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
public enum Registration {
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
            if result != .alreadyRegistered { try steps.audit(audit(row, result: result, status: key.status)) }
            return result
        }
        if let found = try steps.existing() { return try done(existing(found, for: key)) }
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
            if created { try steps.audit(EKTables.firstUseAudit(pin, registration: row)) }
        }
        if let raced = try steps.insert() { return try done(existing(raced, for: key)) }
        return try done(.created)
    }

    /// The registration's audit row for `result`.
    public static func audit(_ event: AuditEvent, result: RegistrationResult, status: KeyStatus) -> AuditEvent {
        var row = event
        switch result {
        case .created:
            row.outcome = "accept"
            row.reason = status == .pending ? "pending_approval" : nil
        case .alreadyRegistered:
            row.outcome = "accept"
            row.reason = "already_registered"
        case .conflict:
            row.outcome = "deny"
            row.reason = "kid_conflict"
        case .revoked:
            row.outcome = "deny"
            row.reason = "key_revoked"
        case .proofReplayed:
            row.outcome = "deny"
            row.reason = "proof_replayed"
        case .tooManyKeys:
            row.outcome = "deny"
            row.reason = "too_many_keys"
        case .ekMismatch:
            row.outcome = "deny"
            row.reason = "ek_mismatch"
        }
        return row
    }

    /// A registration that found `existing` under the kid of `key`: the same user and host
    /// (compared byte for byte) are already registered; anything else is a conflict.
    static func existing(_ existing: RegisteredKey, for key: RegisteredKey) -> RegistrationResult {
        guard existing.user.utf8.elementsEqual(key.user.utf8), existing.host.utf8.elementsEqual(key.host.utf8) else {
            return .conflict
        }
        return existing.status == .revoked ? .revoked : .alreadyRegistered
    }
}

import FingerAuthDomain

// MARK: - Host keys

extension SQLRegistry {
    package func hostKey(kid: String) throws(StoreError) -> RegisteredHostKey? {
        try read { (db) throws(StoreError) -> RegisteredHostKey? in try HostKeyTables.key(db, kid: kid) }
    }

    /// Registrations of one host's keys wait for each other (across instances), so that the
    /// host is left with one active host key.
    package func registerHostKey(
        _ key: RegisteredHostKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, now: Int64
    ) throws(StoreError) -> HostKeyRegistration {
        try write { (db) throws(StoreError) -> HostKeyRegistration in
            // No user name is empty: this lock is the host's host-key lock, no user's.
            try db.serialize(.registration(user: "", host: key.host))
            return try HostKeyTransaction.run(
                db, key, proofJTI: proofJTI, keepUntil: keepUntil, audit: audit, now: now)
        }
    }

    package func revokeHostKeys(kid: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredHostKey] {
        guard kid != nil || host != nil else { return [] }
        return try write { (db) throws(StoreError) -> [RegisteredHostKey] in
            try HostKeyTables.revoke(db, kid: kid, host: host, now: now)
        }
    }

    package func listHostKeys(host: String?) throws(StoreError) -> [RegisteredHostKey] {
        try read { (db) throws(StoreError) -> [RegisteredHostKey] in try HostKeyTables.all(db, host: host) }
    }
}

import FingerAuthDomain

/// The policy on each store: the SQL is `PolicyTables`'; what differs is the connection and
/// the transaction it runs in.
extension SQLiteStore {
    public func policySnapshot(user: String, host: String) throws(StoreError) -> PolicySnapshot {
        try read { (db) throws(StoreError) -> PolicySnapshot in try PolicyTables.snapshot(db, user: user, host: host) }
    }

    public func policyRules() throws(StoreError) -> [PolicyRule] {
        try read { (db) throws(StoreError) -> [PolicyRule] in try PolicyTables.rules(db) }
    }

    public func changePolicy(_ change: PolicyChange, audit: AuditEvent, now: Int64) throws(StoreError) -> PolicyChangeResult {
        try write { (db) throws(StoreError) -> PolicyChangeResult in
            let result = try PolicyTables.apply(change, db, now: now)
            try Self.insertAudit(db, result.audit(audit, change), time: now)
            return result
        }
    }

    public func hostSummaries(page: Paging?) throws(StoreError) -> [HostSummary] {
        try read { (db) throws(StoreError) -> [HostSummary] in try PolicyTables.hosts(db, page: page) }
    }

    public func userLists() throws(StoreError) -> [(list: String, users: [String])] {
        try read { (db) throws(StoreError) -> [(list: String, users: [String])] in try PolicyTables.lists(db) }
    }
}

extension PostgresStore {
    public func policySnapshot(user: String, host: String) throws(StoreError) -> PolicySnapshot {
        try pool.withConnection { (db) throws(StoreError) -> PolicySnapshot in
            try PolicyTables.snapshot(db, user: user, host: host)
        }
    }

    public func policyRules() throws(StoreError) -> [PolicyRule] {
        try pool.withConnection { (db) throws(StoreError) -> [PolicyRule] in try PolicyTables.rules(db) }
    }

    /// One change at a time across every instance: the transaction first takes a lock on
    /// the rules that other changes wait for (readers do not).
    public func changePolicy(_ change: PolicyChange, audit: AuditEvent, now: Int64) throws(StoreError) -> PolicyChangeResult {
        try transaction { (db) throws(StoreError) -> PolicyChangeResult in
            _ = try db.execute("LOCK TABLE policy_rules, host_labels, user_lists IN SHARE ROW EXCLUSIVE MODE")
            let result = try PolicyTables.apply(change, db, now: now)
            try Self.insertAudit(db, result.audit(audit, change), time: now)
            return result
        }
    }

    public func hostSummaries(page: Paging?) throws(StoreError) -> [HostSummary] {
        try pool.withConnection { (db) throws(StoreError) -> [HostSummary] in try PolicyTables.hosts(db, page: page) }
    }

    public func userLists() throws(StoreError) -> [(list: String, users: [String])] {
        try pool.withConnection { (db) throws(StoreError) -> [(list: String, users: [String])] in try PolicyTables.lists(db) }
    }
}

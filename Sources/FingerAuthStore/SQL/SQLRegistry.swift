import FingerAuthDomain

/// Every storage port written once over the shared SQL (`SQLConnection`): a backend
/// (`SQLiteStore`, `PostgresStore`) gives its connections and transactions, its commit
/// pipeline (`BatchStore`), its durability line and `close`; the rest comes from here.
protocol SQLRegistry: AuthStorage {
    associatedtype Connection: SQLConnection

    var dialect: SQLDialect { get }

    /// Runs `body` on a connection that reads.
    func read<T>(_ body: (Connection) throws(StoreError) -> T) throws(StoreError) -> T

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it throws.
    func write<T>(_ body: (Connection) throws(StoreError) -> T) throws(StoreError) -> T

    /// Runs `body`, one statement that writes, in a transaction of its own: pruning's batches.
    func autocommit<T>(_ body: (Connection) throws(StoreError) -> T) throws(StoreError) -> T
}

// MARK: - Keys

extension SQLRegistry {
    package func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? {
        try read { (db) throws(StoreError) -> RegisteredKey? in try KeyTables.key(db, kid: kid) }
    }

    package func listKeys() throws(StoreError) -> [RegisteredKey] {
        try read { (db) throws(StoreError) -> [RegisteredKey] in try KeyTables.all(db) }
    }

    package func keysPage(_ page: Paging) throws(StoreError) -> [RegisteredKey] {
        try read { (db) throws(StoreError) -> [RegisteredKey] in try KeyTables.page(db, page) }
    }

    /// Registrations of the same user on the same host wait for each other, so that two
    /// instances cannot both pass `keyLimit`.
    package func register(
        _ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, keyLimit: Int,
        now: Int64
    ) throws(StoreError) -> RegistrationResult {
        try write { (db) throws(StoreError) -> RegistrationResult in
            try db.serialize(.registration(user: key.user, host: key.host))
            return try RegistrationTransaction.run(
                db, key, proofJTI: proofJTI, keepUntil: keepUntil, audit: audit,
                keyLimit: keyLimit, now: now)
        }
    }

    package func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult {
        try write { (db) throws(StoreError) -> RevocationResult in try KeyTables.revoke(db, kid: kid, now: now) }
    }

    package func revokeKeys(user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey] {
        guard user != nil || host != nil else { return [] }
        return try write { (db) throws(StoreError) -> [RegisteredKey] in
            try KeyTables.revoke(db, user: user, host: host, now: now)
        }
    }

    package func approve(kid: String) throws(StoreError) -> ApprovalResult {
        try write { (db) throws(StoreError) -> ApprovalResult in try KeyTables.approve(db, kid: kid) }
    }

    package func activeKeyHosts(user: String, limit: Int) throws(StoreError) -> [String] {
        try read { (db) throws(StoreError) -> [String] in
            try db.rows(
                #"SELECT DISTINCT host FROM keys WHERE "user" = ?1 AND status = 'active' ORDER BY host LIMIT ?2"#,
                [.text(user), .integer(Int64(max(1, limit)))]
            ) { (row: Connection.Row) throws(StoreError) -> String in
                guard let host = row.text(0) else { throw StoreError("corrupt row in table keys") }
                return host
            }
        }
    }

    package func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)] {
        try read { (db) throws(StoreError) -> [(KeyStatus, Int64)] in try KeyTables.counts(db) }
    }
}

// MARK: - Host and access tokens

extension SQLRegistry {
    package func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        guard let token = HostToken.generate(), let digest = HostToken.hash(token) else {
            throw StoreError("no random bytes for a token")
        }
        try write { (db) throws(StoreError) in try TokenTables.create(db, digest: digest, host: host, now: now) }
        return token
    }

    package func host(forToken token: String) throws(StoreError) -> String? {
        guard let digest = HostToken.hash(token) else { return nil }
        return try read { (db) throws(StoreError) -> String? in try TokenTables.host(db, digest: digest) }
    }

    package func listHostTokens() throws(StoreError) -> [HostTokenRecord] {
        try read { (db) throws(StoreError) -> [HostTokenRecord] in try TokenTables.all(db) }
    }

    /// With `host`, the host's keys, host keys and access tokens go in the same transaction as its
    /// enrollment tokens: no login of that host is accepted after it.
    package func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> HostRevocation {
        if let id, !HostToken.isTokenID(id) { return HostRevocation() }
        return try write { (db) throws(StoreError) -> HostRevocation in
            var revocation = HostRevocation(hosts: try TokenTables.revoke(db, id: id, host: host, now: now))
            if let host {
                revocation.keys = try KeyTables.revoke(db, user: nil, host: host, now: now)
                revocation.accessTokens = try TokenTables.deleteAccessTokens(db, host: host)
                revocation.hostKeys = try HostKeyTables.revoke(db, kid: nil, host: host, now: now)
            }
            return revocation
        }
    }

    package func accessToken(sha256: String) throws(StoreError) -> AccessTokenState? {
        try read { (db) throws(StoreError) -> AccessTokenState? in try TokenTables.accessToken(db, sha256: sha256) }
    }
}

// MARK: - Audit and upkeep

extension SQLRegistry {
    package func audit(_ event: AuditEvent, now: Int64) throws(StoreError) {
        try write { (db) throws(StoreError) in try AuditTables.insert(db, event, time: now) }
    }

    package func auditRecords(_ filter: AuditFilter) throws(StoreError) -> [AuditRecord] {
        try read { (db) throws(StoreError) -> [AuditRecord] in try AuditTables.records(db, filter) }
    }

    /// Available when a read connection answers `SELECT 1`.
    package func health() -> StoreHealth {
        do throws(StoreError) {
            _ = try read { (db) throws(StoreError) in try db.execute("SELECT 1") }
            return .available
        } catch {
            return .unavailable(error.message)
        }
    }

    package func databaseTime() throws(StoreError) -> Int64 {
        try read { (db) throws(StoreError) -> Int64 in
            guard
                let now = try db.first("SELECT \(db.dialect.clockTime)", [], { (row: Connection.Row) in row.int64(0) })
                    ?? nil
            else {
                throw StoreError("no time from the database")
            }
            return now
        }
    }

    /// Each statement deletes at most `AuditTables.pruneBatch` rows in a transaction of its
    /// own and runs again while it found a full batch: a login waits for one batch at most.
    /// Approvals that ended `ApprovalTables.keptAfterEnd` ago go in the same pass, uncounted.
    package func prune(_ policy: PrunePolicy) throws(StoreError) -> PruneResult {
        var result = PruneResult()
        for (field, statement) in AuditTables.pruning(dialect, policy) {
            result[keyPath: field] += try pruneInBatches(statement)
        }
        _ = try pruneInBatches(ApprovalTables.pruning(dialect))
        return result
    }

    /// Runs a pruning `statement` until it deletes less than a full batch; the rows deleted.
    private func pruneInBatches(_ statement: SQLStatement) throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try autocommit { (db) throws(StoreError) -> Int in try db.run(statement) }
            total += deleted
            if deleted < AuditTables.pruneBatch { return total }
        }
    }

    package var sharesFailureCounts: Bool { dialect.sharesFailureCounts }

    package func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? {
        guard dialect.sharesFailureCounts else { return nil }
        return try read { (db) throws(StoreError) -> FailureWindow? in
            try AuditTables.failureWindow(db, key: key, now: now)
        }
    }

    package func countAttempt(key: String, now: Int64, window: Int64) throws(StoreError) -> Int {
        guard dialect.sharesFailureCounts else { throw StoreError("this store keeps no shared counts") }
        return try autocommit { (db) throws(StoreError) -> Int in
            try AuditTables.countAttempt(db, key: key, now: now, window: window)
        }
    }

    package func takeBackAttempt(key: String, now: Int64) throws(StoreError) {
        guard dialect.sharesFailureCounts else { throw StoreError("this store keeps no shared counts") }
        _ = try autocommit { (db) throws(StoreError) -> Int in try db.run(AuditTables.takeBack(key: key, now: now)) }
    }

    /// One statement: the policy's snapshot, and the windows only where they are shared.
    package func loginReads(user: String, host: String, failureKeys: [String], now: Int64) throws(StoreError)
        -> LoginReads
    {
        let keys = dialect.sharesFailureCounts ? failureKeys : []
        return try read { (db) throws(StoreError) -> LoginReads in
            try PolicyTables.loginReads(db, user: user, host: host, failureKeys: keys, now: now)
        }
    }
}

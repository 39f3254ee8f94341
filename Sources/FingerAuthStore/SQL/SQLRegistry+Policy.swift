import FingerAuthCore
import FingerAuthDomain

// MARK: - Policy, host labels, user lists, EK pins

extension SQLRegistry {
    package func policySnapshot(user: String, host: String) throws(StoreError) -> PolicySnapshot {
        try read { (db) throws(StoreError) -> PolicySnapshot in try PolicyTables.snapshot(db, user: user, host: host) }
    }

    package func policyRules() throws(StoreError) -> [PolicyRule] {
        try read { (db) throws(StoreError) -> [PolicyRule] in try PolicyTables.rules(db) }
    }

    /// One change at a time across every instance: the transaction first takes the lock
    /// that other changes wait for (readers do not).
    package func changePolicy(_ change: PolicyChange, audit: AuditEvent, now: Int64) throws(StoreError)
        -> PolicyChangeResult
    {
        try write { (db) throws(StoreError) -> PolicyChangeResult in
            try db.serialize(.policy)
            let result = try PolicyTables.apply(change, db, now: now)
            try AuditTables.insert(db, result.audit(audit, change), time: now)
            return result
        }
    }

    package func hostSummaries(page: Paging?) throws(StoreError) -> [HostSummary] {
        try read { (db) throws(StoreError) -> [HostSummary] in try PolicyTables.hosts(db, page: page) }
    }

    package func userLists() throws(StoreError) -> [(list: String, users: [String])] {
        try read { (db) throws(StoreError) -> [(list: String, users: [String])] in try PolicyTables.lists(db) }
    }

    package func ekPin(host: String) throws(StoreError) -> EKPin? {
        try read { (db) throws(StoreError) -> EKPin? in try EKTables.pin(db, host: host) }
    }

    /// One change at a time per host across instances, and a registration's pin on first
    /// use waits for it.
    package func changeEKPin(_ change: EKPinChange, admin: String, peer: String, now: Int64) throws(StoreError)
        -> EKPinResult
    {
        try write { (db) throws(StoreError) -> EKPinResult in
            try db.serialize(.endorsementKey(host: change.host))
            let result = try EKTables.apply(db, change, admin: admin, now: now)
            for row in result.auditEvents(change, admin: admin, peer: peer) {
                try AuditTables.insert(db, row, time: now)
            }
            return result
        }
    }
}

// MARK: - Attestation challenges

extension SQLRegistry {
    /// One admission at a time, fleet-wide, so the limits hold across instances.
    package func addChallenge(
        _ challenge: StoredChallenge, perHost: Int, capacity: Int,
        now: Int64
    ) throws(StoreError) -> ChallengeAdmission {
        try write { (db) throws(StoreError) -> ChallengeAdmission in
            try db.serialize(.challenges)
            return try ChallengeTables.add(db, challenge, perHost: perHost, capacity: capacity, now: now)
        }
    }

    package func takeChallenge(id: String, now: Int64) throws(StoreError) -> StoredChallenge? {
        try write { (db) throws(StoreError) -> StoredChallenge? in try ChallengeTables.take(db, id: id, now: now) }
    }
}

// MARK: - The console's reads and its accounts

extension SQLRegistry {
    package func consoleAudit(_ query: ConsoleAuditQuery) throws(StoreError) -> [AuditRecord] {
        try read { (db) throws(StoreError) -> [AuditRecord] in try AdminTables.audit(db, query) }
    }

    package func lastLogins(of keys: [RegisteredKey]) throws(StoreError) -> [String: Int64] {
        try read { (db) throws(StoreError) -> [String: Int64] in try AdminTables.lastLogins(db, of: keys) }
    }

    package func lastLogins(hosts: [String]) throws(StoreError) -> [String: Int64] {
        try read { (db) throws(StoreError) -> [String: Int64] in try AdminTables.lastLogins(db, hosts: hosts) }
    }

    package func loginStages(hosts: [String], since: Int64, limit: Int) throws(StoreError) -> [String:
        [LoginStageReport]]
    {
        try read { (db) throws(StoreError) -> [String: [LoginStageReport]] in
            try AdminTables.loginStages(db, hosts: hosts, since: since, limit: limit)
        }
    }

    package func loginsPerHour(since: Int64) throws(StoreError) -> [(hour: Int64, accepted: Int64, refused: Int64)] {
        try read { (db) throws(StoreError) -> [(hour: Int64, accepted: Int64, refused: Int64)] in
            try AdminTables.loginsPerHour(db, since: since)
        }
    }

    package func topRefusals(since: Int64, limit: Int) throws(StoreError) -> [(reason: String, count: Int64)] {
        try read { (db) throws(StoreError) -> [(reason: String, count: Int64)] in
            try AdminTables.topRefusals(db, since: since, limit: limit)
        }
    }

    package func auditUsers() throws(StoreError) -> [(user: String, rows: Int64)] {
        try read { (db) throws(StoreError) -> [(user: String, rows: Int64)] in try AdminTables.auditUsers(db) }
    }

    package func createAdmin(name: String, setupDigest: [UInt8], expires: Int64, now: Int64) throws(StoreError) -> Bool
    {
        try write { (db) throws(StoreError) -> Bool in
            try AdminTables.create(db, name: name, setupDigest: setupDigest, expires: expires, now: now)
        }
    }

    package func completeAdminSetup(setupDigest: [UInt8], passwordHash: String, now: Int64) throws(StoreError)
        -> String?
    {
        try write { (db) throws(StoreError) -> String? in
            try AdminTables.completeSetup(db, setupDigest: setupDigest, passwordHash: passwordHash, now: now)
        }
    }

    package func adminSetupState(setupDigest: [UInt8], now: Int64) throws(StoreError) -> AdminSetupState {
        try read { (db) throws(StoreError) -> AdminSetupState in
            try AdminTables.setupState(db, setupDigest: setupDigest, now: now)
        }
    }

    package func resetAdmin(name: String, setupDigest: [UInt8], expires: Int64) throws(StoreError) -> Bool {
        try write { (db) throws(StoreError) -> Bool in
            try AdminTables.reset(db, name: name, setupDigest: setupDigest, expires: expires)
        }
    }

    package func removeAdmin(name: String) throws(StoreError) -> Bool {
        try write { (db) throws(StoreError) -> Bool in try AdminTables.remove(db, name: name) }
    }

    package func adminPasswordHash(name: String) throws(StoreError) -> String? {
        try read { (db) throws(StoreError) -> String? in try AdminTables.passwordHash(db, name: name) }
    }

    package func listAdmins() throws(StoreError) -> [(name: String, ready: Bool)] {
        try read { (db) throws(StoreError) -> [(name: String, ready: Bool)] in try AdminTables.list(db) }
    }
}

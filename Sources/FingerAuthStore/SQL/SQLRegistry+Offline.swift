import FingerAuthDomain

// MARK: - Offline grants

extension SQLRegistry {
    package func grantStates(gids: [String], now: Int64) throws(StoreError) -> [String: GrantState] {
        try read { (db) throws(StoreError) in try OfflineTables.states(db, gids: gids, now: now) }
    }

    package func liveGrants(host: String?, now: Int64) throws(StoreError) -> [IssuedGrant] {
        try read { (db) throws(StoreError) in try OfflineTables.live(db, host: host, now: now) }
    }

    package func withdrawGrants(host: String, user: String?, admin: String, peer: String, now: Int64)
        throws(StoreError) -> Int
    {
        try write { (db) throws(StoreError) -> Int in
            let count = try OfflineTables.withdraw(db, host: host, user: user, now: now)
            let row = AuditEvent(
                event: .grantWithdraw, user: user, host: host, outcome: .accept,
                reason: .detail("by \(admin): \(count) grant\(count == 1 ? "" : "s") withdrawn"), peer: peer,
                admin: admin)
            try AuditTables.insert(db, row, time: now)
            return count
        }
    }

    package func storeOfflineRecords(_ upload: OfflineUpload) throws(StoreError) -> OfflineUploadResult {
        try write { (db) throws(StoreError) in try OfflineRecordRows.store(db, upload) }
    }

    package func holdsOfflineGrants() throws(StoreError) -> Bool {
        try read { (db) throws(StoreError) in try OfflineTables.holdsAny(db) }
    }
}

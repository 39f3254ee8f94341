import FingerAuthDomain

/// The request path's writes: a batch of items from many requests in one transaction, made
/// durable by one commit (one fsync of the write-ahead log).
extension SQLiteStore {
    package func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] {
        guard !items.isEmpty else { return [] }
        return try write { (db) throws(StoreError) -> [WriteOutcome] in
            var outcomes: [WriteOutcome] = []
            outcomes.reserveCapacity(items.count)
            for item in items {
                switch item {
                case let .claim(claim):
                    outcomes.append(try Self.apply(db, claim))
                case let .audit(event, time):
                    try db.run(AuditTables.insert(event, time: time))
                    outcomes.append(.written)
                case let .refusals(peer, window, count, reason):
                    try db.run(AuditTables.refusals(peer: peer, window: window, count: count, reason: reason))
                    outcomes.append(.written)
                case .failure:
                    // SQLite's failure counts live in the process (sharesFailureCounts false).
                    outcomes.append(.written)
                case let .offlineRecords(upload):
                    outcomes.append(.offlineStored(try OfflineRecordRows.store(db, upload)))
                }
            }
            return outcomes
        }
    }

    /// One claim inside the batch's transaction: the key as it is now, the jti, the effect,
    /// the audit row.
    static func apply(_ db: SQLiteDatabase, _ claim: TokenClaim) throws(StoreError) -> WriteOutcome {
        var outcome = WriteOutcome.accepted
        if let status = try KeyTables.status(db, kid: claim.kid, user: claim.user, host: claim.host) {
            if !claim.allowed.contains(status) {
                outcome = .refused(.status(status))
            } else if try !KeyTables.claim(db, jti: claim.jti, keepUntil: claim.keepUntil) {
                outcome = .refused(.replayed)
            }
        } else {
            outcome = .refused(.keyChanged)
        }
        if outcome == .accepted {
            switch claim.effect {
            case .none: break
            case let .accessToken(sha256, expires):
                try db.run(TokenTables.insertAccessToken(sha256: sha256, claim: claim, expires: expires))
            case .revokeKey:
                try db.run(KeyTables.markRevoked(kid: claim.kid, now: claim.time))
            case let .offlineGrant(grant):
                try db.run(OfflineTables.withdraw(kid: claim.kid, now: claim.time))
                if let grant { try db.run(OfflineTables.insert(grant)) }
            }
        }
        var row = claim.audit
        row.user = claim.user
        row.host = claim.host
        row.kid = claim.kid
        row.jti = claim.jti
        row.claimedUser = nil
        row.verified = true
        row.count = 1
        switch outcome {
        case let .refused(refusal):
            row.outcome = .deny
            row.reason = .token(Refusal(refusal))
        default:
            row.outcome = .accept
            row.reason = claim.acceptReason
        }
        try db.run(AuditTables.insert(row, time: claim.time))
        return outcome
    }
}

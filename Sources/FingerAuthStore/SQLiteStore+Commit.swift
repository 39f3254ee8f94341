import FingerAuthDomain

/// The request path's writes: a batch of items from many requests in one transaction, made
/// durable by one commit (one fsync of the write-ahead log).
extension SQLiteStore {
    public func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] {
        guard !items.isEmpty else { return [] }
        return try write { (db) throws(StoreError) -> [WriteOutcome] in
            var outcomes: [WriteOutcome] = []
            outcomes.reserveCapacity(items.count)
            for item in items {
                switch item {
                case let .claim(claim):
                    outcomes.append(try Self.apply(db, claim))
                case let .audit(event, time):
                    try Self.insertAudit(db, event, time: time)
                    outcomes.append(.written)
                case let .refusals(peer, window, count, reason):
                    try Self.addRefusals(db, peer: peer, window: window, count: count, reason: reason)
                    outcomes.append(.written)
                case .failure:
                    // SQLite's failure counts live in the process (sharesFailureCounts false).
                    outcomes.append(.written)
                }
            }
            return outcomes
        }
    }

    /// One claim inside the batch's transaction: the key as it is now, the jti, the effect,
    /// the audit row.
    static func apply(_ db: SQLiteDatabase, _ claim: TokenClaim) throws(StoreError) -> WriteOutcome {
        let status = try db.withStatement("SELECT status FROM keys WHERE kid = ?1 AND user = ?2 AND host = ?3") {
            (stmt) throws(StoreError) -> KeyStatus? in
            try stmt.bind(1, claim.kid)
            try stmt.bind(2, claim.user)
            try stmt.bind(3, claim.host)
            guard try stmt.step() else { return nil }
            guard let status = stmt.text(0).flatMap(KeyStatus.init(rawValue:)) else {
                throw StoreError("corrupt row in table keys")
            }
            return status
        }
        var outcome = WriteOutcome.accepted
        if let status {
            if !claim.allowed.contains(status) {
                outcome = .refused(.status(status))
            } else if try !claimJTI(db, claim.jti, keepUntil: claim.keepUntil) {
                outcome = .refused(.replayed)
            }
        } else {
            outcome = .refused(.keyChanged)
        }
        if outcome == .accepted {
            switch claim.effect {
            case .none: break
            case let .accessToken(sha256, expires):
                try insertAccessToken(db, sha256: sha256, claim: claim, expires: expires)
            case .revokeKey:
                try markRevoked(db, kid: claim.kid, now: claim.time)
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
            row.outcome = "deny"
            row.reason = refusal.rawValue
        default:
            row.outcome = "accept"
            row.reason = claim.acceptReason
        }
        try insertAudit(db, row, time: claim.time)
        return outcome
    }

    /// INSERT of `jti` into the replay table (primary key): false when it is already there.
    static func claimJTI(_ db: SQLiteDatabase, _ jti: String, keepUntil: Int64) throws(StoreError) -> Bool {
        try db.withStatement("INSERT INTO replay (jti, keep_until) VALUES (?1, ?2) ON CONFLICT (jti) DO NOTHING") {
            (insert) throws(StoreError) -> Bool in
            try insert.bind(1, jti)
            try insert.bind(2, keepUntil)
            try insert.run()
            return db.changes == 1
        }
    }

    static func insertAccessToken(_ db: SQLiteDatabase, sha256: String, claim: TokenClaim, expires: Int64) throws(StoreError) {
        try db.withStatement("""
            INSERT INTO access_tokens (sha256, user, host, kid, created, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """) { (insert) throws(StoreError) in
            try insert.bind(1, sha256)
            try insert.bind(2, claim.user)
            try insert.bind(3, claim.host)
            try insert.bind(4, claim.kid)
            try insert.bind(5, claim.time)
            try insert.bind(6, expires)
            try insert.run()
        }
    }

    /// Adds `count` to the `refusals` row of (`peer`, `window`), creating it.
    static func addRefusals(_ db: SQLiteDatabase, peer: String, window: Int64, count: Int64, reason: String) throws(StoreError) {
        try db.withStatement("""
            INSERT INTO audit (time, event, outcome, reason, peer, verified, count)
            VALUES (?1, 'refusals', 'deny', ?2, ?3, 0, ?4)
            ON CONFLICT (peer, time) WHERE event = 'refusals' DO UPDATE SET count = count + excluded.count
            """) { (upsert) throws(StoreError) in
            try upsert.bind(1, window)
            try upsert.bind(2, reason)
            try upsert.bind(3, peer)
            try upsert.bind(4, count)
            try upsert.run()
        }
    }
}

import FingerAuthDomain

/// The request path's writes on PostgreSQL: a batch is one pipeline — every item one
/// statement, one Sync — so the whole batch costs one round trip and one durable commit.
extension PostgresStore {
    package func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] {
        guard !items.isEmpty else { return [] }
        // Offline uploads read before they write: each is a transaction of its own (on
        // PostgreSQL the batch is one pipeline of single statements); the rest are pipelined.
        guard !items.contains(where: Self.isOfflineUpload) else {
            var outcomes: [WriteOutcome] = []
            var rest: [WriteItem] = []
            var places: [Int] = []
            for item in items {
                if case let .offlineRecords(upload) = item {
                    outcomes.append(.offlineStored(try storeOfflineRecords(upload)))
                } else {
                    places.append(outcomes.count)
                    outcomes.append(.written)
                    rest.append(item)
                }
            }
            for (place, outcome) in zip(places, try commit(rest)) { outcomes[place] = outcome }
            return outcomes
        }
        let statements = items.map(Self.statement)
        let results = try pool.withConnection(retry: false) { (db) throws(StoreError) -> [PostgresResult] in
            try db.pipeline(statements)
        }
        guard results.count == items.count else {
            throw StoreError("postgresql: batch answered \(results.count) of \(items.count)")
        }
        var outcomes: [WriteOutcome] = []
        outcomes.reserveCapacity(items.count)
        for (item, result) in zip(items, results) {
            switch item {
            case let .claim(claim): outcomes.append(try Self.outcome(of: claim, result))
            case .audit, .refusals, .failure, .offlineRecords: outcomes.append(.written)
            }
        }
        return outcomes
    }

    static func isOfflineUpload(_ item: WriteItem) -> Bool {
        if case .offlineRecords = item { return true }
        return false
    }

    static func statement(_ item: WriteItem) -> SQLStatement {
        switch item {
        case let .claim(claim):
            var token: String?
            var expires: Int64?
            var grants = false
            var grant: IssuedGrant?
            switch claim.effect {
            case let .accessToken(sha256, until):
                token = sha256
                expires = until
            case let .offlineGrant(issued):
                grants = true
                grant = issued
            case .none, .revokeKey: break
            }
            return SQLStatement(
                claimSQL,
                [
                    .text(claim.kid), .text(claim.user), .text(claim.host), .text(claim.jti), .integer(claim.keepUntil),
                    .text(claim.allowed.map(\.rawValue).joined(separator: ",")), .text(token), .integer(claim.time),
                    .integer(expires), .boolean(claim.effect == .revokeKey), .text(claim.audit.event.name),
                    .text(claim.acceptReason?.text), .text(claim.audit.peer), .text(claim.audit.service),
                    .text(claim.audit.clientService),
                    .integer(claim.audit.stages?.ready), .integer(claim.audit.stages?.match),
                    .integer(claim.audit.stages?.connect),
                    .boolean(grants), .text(grant?.gid), .integer(grant?.notAfter),
                    .integer(grant.map { Int64($0.uses) }),
                    .text(grant?.services.joined(separator: ",")), .integer(grant?.rule),
                    .text(claim.audit.approval), .text(claim.audit.clientAddress), .text(claim.audit.workstation),
                ])
        case let .audit(event, time):
            return AuditTables.insert(event, time: time)
        case let .refusals(peer, window, count, reason):
            return AuditTables.refusals(peer: peer, window: window, count: count, reason: reason)
        case let .failure(key, now, window):
            return AuditTables.failure(key: key, now: now, window: window)
        case .offlineRecords:
            // Never pipelined: `commit` stores uploads in transactions of their own.
            return SQLStatement("SELECT 1")
        }
    }

    /// The claim's outcome from its statement's one row: the key's status (NULL when it is
    /// gone or bound elsewhere) and whether the jti was claimed.
    static func outcome(of claim: TokenClaim, _ result: PostgresResult) throws(StoreError) -> WriteOutcome {
        guard result.rows == 1, let claimed = result.bool(0, 1) else {
            throw StoreError("postgresql: claim without an answer")
        }
        if claimed { return .accepted }
        guard let status = result.text(0, 0).flatMap(KeyStatus.init(rawValue:)) else { return .refused(.keyChanged) }
        return claim.allowed.contains(status) ? .refused(.replayed) : .refused(.status(status))
    }

    /// One statement per verified token (PostgreSQL's own: SQLite runs the same steps as
    /// statements of its batch's transaction): the key's row read and share-locked (a revocation
    /// either committed before and is seen, or waits for this transaction), the jti claimed
    /// when the status allows it, the effect (access token, own revocation, the key's offline
    /// grants replaced) applied only when the claim succeeded, and the audit row written with
    /// the outcome.
    static let claimSQL = #"""
        WITH k AS (
            SELECT status FROM keys WHERE kid = $1 AND "user" = $2 AND host = $3 FOR SHARE
        ), c AS (
            INSERT INTO replay (jti, keep_until)
            SELECT $4, $5 WHERE EXISTS (SELECT 1 FROM k WHERE status = ANY (string_to_array($6, ',')))
            ON CONFLICT (jti) DO NOTHING
            RETURNING 1
        ), t AS (
            INSERT INTO access_tokens (sha256, "user", host, kid, created, expires)
            SELECT $7, $2, $3, $1, $8, $9 WHERE $7::text IS NOT NULL AND EXISTS (SELECT 1 FROM c)
            RETURNING 1
        ), r AS (
            UPDATE keys SET status = 'revoked', revoked = $8
            WHERE $10::boolean AND kid = $1 AND status <> 'revoked' AND EXISTS (SELECT 1 FROM c)
            RETURNING 1
        ), w AS (
            UPDATE offline_grants SET withdrawn = $8
            WHERE $19::boolean AND kid = $1 AND withdrawn IS NULL AND EXISTS (SELECT 1 FROM c)
            RETURNING 1
        ), g AS (
            INSERT INTO offline_grants (gid, "user", host, kid, issued, not_after, uses, services, rule)
            SELECT $20, $2, $3, $1, $8, $21, $22, $23, $24 WHERE $20::text IS NOT NULL AND EXISTS (SELECT 1 FROM c)
            RETURNING 1
        ), a AS (
            INSERT INTO audit ("time", event, "user", host, kid, jti, outcome, reason, peer, verified, count, service, client_service,
                               ready_ms, match_ms, connect_ms, approval, client_address, workstation)
            SELECT $8, $11, $2, $3, $1, $4,
                CASE WHEN EXISTS (SELECT 1 FROM c) THEN \#(AuditOutcome.accept.sqlLiteral) ELSE \#(AuditOutcome.deny.sqlLiteral) END,
                CASE WHEN EXISTS (SELECT 1 FROM c) THEN $12::text
                     WHEN NOT EXISTS (SELECT 1 FROM k) THEN 'key_changed'
                     WHEN NOT EXISTS (SELECT 1 FROM k WHERE status = ANY (string_to_array($6, ',')))
                         THEN 'key_' || (SELECT status FROM k)
                     ELSE 'replayed' END,
                $13, true, 1, $14, $15, $16, $17, $18, $25, $26, $27
            RETURNING 1
        )
        SELECT (SELECT status FROM k), EXISTS (SELECT 1 FROM c)
        """#
}

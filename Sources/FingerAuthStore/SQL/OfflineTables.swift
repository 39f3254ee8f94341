import FingerAuthCore
import FingerAuthDomain

/// Offline grants and the offline records hosts upload, the same SQL on both stores.
///
/// A grant is live while it is unexpired, not withdrawn (replaced by the key's next grant,
/// or by an admin) and its key is active: revoking a key — by its holder, an admin, or with
/// its host's token — withdraws the key's grants without a write of their own.
enum OfflineTables {
    /// The tables of schema 11; `integer` is the store's 64-bit integer type.
    static func schema(integer: String) -> String {
        """
        CREATE TABLE offline_grants (
            gid TEXT PRIMARY KEY NOT NULL,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            kid TEXT NOT NULL,
            issued \(integer) NOT NULL,
            not_after \(integer) NOT NULL,
            uses INTEGER NOT NULL,
            services TEXT NOT NULL,
            rule \(integer) NOT NULL,
            withdrawn \(integer)
        );
        CREATE INDEX offline_grants_kid ON offline_grants (kid) WHERE withdrawn IS NULL;
        CREATE INDEX offline_grants_host ON offline_grants (host, not_after) WHERE withdrawn IS NULL;
        CREATE TABLE offline_chains (
            kid TEXT PRIMARY KEY NOT NULL,
            seq \(integer) NOT NULL,
            hash TEXT NOT NULL
        );
        """
    }

    /// Withdraws the key's live grants (a new login replaces them).
    static func withdraw(kid: String, now: Int64) -> SQLStatement {
        SQLStatement(
            "UPDATE offline_grants SET withdrawn = ?2 WHERE kid = ?1 AND withdrawn IS NULL",
            [.text(kid), .integer(now)])
    }

    static func insert(_ grant: IssuedGrant) -> SQLStatement {
        SQLStatement(
            #"""
            INSERT INTO offline_grants (gid, "user", host, kid, issued, not_after, uses, services, rule)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            """#,
            [
                .text(grant.gid), .text(grant.user), .text(grant.host), .text(grant.kid), .integer(grant.issued),
                .integer(grant.notAfter), .integer(Int64(grant.uses)), .text(grant.services.joined(separator: ",")),
                .integer(grant.rule),
            ])
    }

    static let liveCondition = """
        g.withdrawn IS NULL AND g.not_after > CAST(?1 AS BIGINT)
           AND EXISTS (SELECT 1 FROM keys k WHERE k.kid = g.kid AND k.status = 'active')
        """

    /// Where each of `gids` stands, in one statement (a sync names at most 32).
    static func states(_ db: some SQLConnection, gids: [String], now: Int64) throws(StoreError) -> [String: GrantState]
    {
        var states: [String: GrantState] = [:]
        for gid in gids { states[gid] = .withdrawn }
        guard !gids.isEmpty else { return states }
        let placeholders = (0..<gids.count).map { "?\($0 + 2)" }.joined(separator: ", ")
        let live = try db.textRows(
            "SELECT g.gid FROM offline_grants g WHERE g.gid IN (\(placeholders)) AND \(liveCondition)",
            [String(now)] + gids)
        for row in live { if let gid = row.first ?? nil { states[gid] = .live } }
        return states
    }

    static func live(_ db: some SQLConnection, host: String?, now: Int64) throws(StoreError) -> [IssuedGrant] {
        let rows = try db.textRows(
            #"""
            SELECT g.gid, g."user", g.host, g.kid, CAST(g.issued AS TEXT), CAST(g.not_after AS TEXT),
                   CAST(g.uses AS TEXT), g.services, CAST(g.rule AS TEXT)
              FROM offline_grants g
             WHERE (CAST(?2 AS TEXT) IS NULL OR g.host = ?2) AND
            """# + " " + liveCondition + " ORDER BY g.issued DESC, g.gid LIMIT 1000", [String(now), host])
        var grants: [IssuedGrant] = []
        for row in rows {
            guard row.count == 9, let gid = row[0], let user = row[1], let host = row[2], let kid = row[3],
                let issued = row[4].flatMap({ Int64($0) }), let notAfter = row[5].flatMap({ Int64($0) }),
                let uses = row[6].flatMap({ Int($0) }), let services = row[7], let rule = row[8].flatMap({ Int64($0) })
            else { throw StoreError("corrupt row in table offline_grants") }
            grants.append(
                IssuedGrant(
                    gid: gid, user: user, host: host, kid: kid, issued: issued, notAfter: notAfter, uses: uses,
                    services: services.split(separator: ",").map(String.init), rule: rule))
        }
        return grants
    }

    /// Withdraws the live grants of `host` (and `user`); how many.
    static func withdraw(_ db: some SQLConnection, host: String, user: String?, now: Int64) throws(StoreError) -> Int {
        try db.execute(
            #"""
            UPDATE offline_grants SET withdrawn = ?1
             WHERE withdrawn IS NULL AND host = ?2 AND (CAST(?3 AS TEXT) IS NULL OR "user" = ?3)
            """#, [.integer(now), .text(host), .text(user)])
    }

    /// One key's records after the last one held, in order, inside the caller's transaction
    /// (`OfflineGrantStore.storeOfflineRecords`).
    static func store(_ db: some SQLConnection, _ records: [VerifiedOfflineRecord], kid: String, peer: String)
        throws(StoreError) -> OfflineUploadResult
    {
        try db.serialize(.offlineChain(kid: kid))
        let held = try db.textRows("SELECT CAST(seq AS TEXT), hash FROM offline_chains WHERE kid = ?1", [kid])
        var last: Int64 = 0
        var lastHash = ""
        if let row = held.first {
            guard row.count == 2, let seq = row[0].flatMap({ Int64($0) }), let hash = row[1] else {
                throw StoreError("corrupt row in table offline_chains")
            }
            last = seq
            lastHash = hash
        }
        var stored = 0
        var flagged = 0
        for verified in records.sorted(by: { $0.record.seq < $1.record.seq }) {
            let record = verified.record
            if record.seq < last { continue }
            if record.seq == last {
                // Held already; the same record again is a retry, another one is a changed record.
                if verified.lineHash != lastHash {
                    try AuditTables.insert(
                        db, gap(record, peer, "record \(record.seq) differs from the one held"), time: record.at)
                    flagged += 1
                }
                continue
            }
            if record.seq > last + 1 {
                let missing =
                    record.seq - 1 == last + 1 ? "record \(last + 1)" : "records \(last + 1) to \(record.seq - 1)"
                try AuditTables.insert(db, gap(record, peer, "\(missing) missing"), time: record.at)
                flagged += 1
            } else if !record.previous.sameBytes(as: lastHash) {
                try AuditTables.insert(
                    db, gap(record, peer, "record \(record.seq) does not follow record \(last) (changed or removed)"),
                    time: record.at)
                flagged += 1
            }
            var row = AuditEvent(
                event: .offlineLogin, user: record.user, host: record.host, kid: record.kid, jti: record.jti,
                outcome: .accept, reason: .detail("grant \(record.gid), record \(record.seq)"), peer: peer,
                verified: true)
            row.service = record.service
            try AuditTables.insert(db, row, time: record.at)
            last = record.seq
            lastHash = verified.lineHash
            stored += 1
        }
        if stored > 0 {
            _ = try db.execute(
                """
                INSERT INTO offline_chains (kid, seq, hash) VALUES (?1, ?2, ?3)
                ON CONFLICT (kid) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash
                """, [.text(kid), .integer(last), .text(lastHash)])
        }
        return OfflineUploadResult(lastSeq: last, stored: stored, flagged: flagged)
    }

    private static func gap(_ record: OfflineRecord, _ peer: String, _ why: String) -> AuditEvent {
        AuditEvent(
            event: .offlineGap, user: record.user, host: record.host, kid: record.kid, outcome: .deny,
            reason: .detail(why), peer: peer, verified: true)
    }
}

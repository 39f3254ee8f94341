import FingerAuthCore
import FingerAuthDomain

/// The offline records one upload brings for one device key, judged and written inside the
/// caller's transaction (`OfflineGrantStore.storeOfflineRecords`), the same SQL on both stores.
///
/// The uploader dates nothing: each row is written at the receipt time, the record's own
/// `at` in `claimed_time`. Each record is judged against the grant it names
/// (`offline_grants`: same key, user and host, its window, its withdrawal, its uses) and
/// against the chain of the key's records held so far (`offline_chains`: the last `seq` and
/// the hash of its line). The chain follows the last record stored, so a record with a
/// huge `seq` costs one `seq_jump` row and the genuine records after it one `seq_rewind`
/// row — none is skipped. A record whose login row exists already (same key and `jti`) is
/// a retry: acknowledged, no row.
enum OfflineRecordRows {
    /// A grant as a record is judged against it.
    private struct Grant {
        var user: String
        var host: String
        var kid: String
        var issued: Int64
        var notAfter: Int64
        var uses: Int64
        var used: Int64
        var withdrawn: Int64?
    }

    static func store(_ db: some SQLConnection, _ upload: OfflineUpload) throws(StoreError) -> OfflineUploadResult {
        guard let first = upload.records.first?.record else { return OfflineUploadResult() }
        let kid = upload.kid
        try db.serialize(.offlineChain(kid: kid))
        // The key as it is now, inside the transaction: only a key that was approved
        // (active, or revoked since) has records anyone keeps.
        let status =
            try db.textRows(
                #"SELECT status FROM keys WHERE kid = ?1 AND "user" = ?2 AND host = ?3"#, [kid, first.user, first.host]
            ).first?.first ?? nil
        let revoked: Bool
        switch status {
        case "active": revoked = false
        case "revoked": revoked = true
        default: return OfflineUploadResult(rejected: upload.records.map(\.record.seq))
        }
        var (last, lastHash) = try chain(db, kid: kid)
        var budget = OfflineUpload.maxRowsPerKey - (try rowsInWindow(db, user: first.user, kid: kid, now: upload.now))
        var result = OfflineUploadResult()
        for verified in upload.records.sorted(by: { $0.record.seq < $1.record.seq }) {
            let record = verified.record
            guard record.kid.sameBytes(as: kid), record.user.sameBytes(as: first.user),
                record.host.sameBytes(as: first.host)
            else {
                result.rejected.append(record.seq)
                continue
            }
            if try isHeld(db, record) {
                result.held.append(record.seq)
                continue
            }
            let grant = try self.grant(db, gid: record.gid)
            let ofThisKey = grant.map { $0.kid == kid && $0.user == record.user && $0.host == record.host } ?? false
            var codes = judge(record, ofThisKey ? grant : nil, now: upload.now)
            if revoked {
                // Evidence only for the grants this key held, and only up to their uses.
                guard ofThisKey, !codes.contains("no_grant"), !codes.contains("over_uses") else {
                    result.rejected.append(record.seq)
                    continue
                }
                codes.insert("after_revocation", at: 0)
            }
            let gap = gapReason(record, verified.lineHash, last: last, lastHash: lastHash)
            let rows = gap == nil ? 1 : 2
            guard budget >= rows else {
                result.deferred += 1
                continue
            }
            budget -= rows
            if let gap {
                var row = AuditEvent(
                    event: .offlineGap, user: record.user, host: record.host, kid: kid, outcome: .deny,
                    reason: .detail(gap), peer: upload.peer, verified: true)
                row.claimedTime = record.at
                try AuditTables.insert(db, row, time: upload.now)
                result.flagged += 1
            }
            let place = "grant \(record.gid), record \(record.seq)"
            var row = AuditEvent(
                event: .offlineLogin, user: record.user, host: record.host, kid: kid, jti: record.jti,
                outcome: codes.isEmpty ? .accept : .deny,
                reason: .detail(codes.isEmpty ? place : codes.joined(separator: ",") + ": " + place),
                peer: upload.peer, verified: true)
            row.service = record.service
            row.claimedTime = record.at
            try AuditTables.insert(db, row, time: upload.now)
            if ofThisKey {
                _ = try db.execute("UPDATE offline_grants SET used = used + 1 WHERE gid = ?1", [.text(record.gid)])
            }
            last = record.seq
            lastHash = verified.lineHash
            result.held.append(record.seq)
            result.stored += 1
        }
        if result.stored > 0 {
            _ = try db.execute(
                """
                INSERT INTO offline_chains (kid, seq, hash) VALUES (?1, ?2, ?3)
                ON CONFLICT (kid) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash
                """, [.text(kid), .integer(last), .text(lastHash)])
        }
        return result
    }

    /// Why `record` is outside `grant` (nil: it names no grant of its key), as reason words;
    /// empty when it is inside. Its claimed time must lie in the grant's window, before any
    /// withdrawal and not after its receipt (`now`), each give or take `OfflineUpload.skew`.
    private static func judge(_ record: OfflineRecord, _ grant: Grant?, now: Int64) -> [String] {
        guard let grant else { return ["no_grant"] }
        var codes: [String] = []
        let skew = OfflineUpload.skew
        if record.at < grant.issued - skew || record.at > grant.notAfter + skew || record.at > now + skew {
            codes.append("outside_window")
        }
        if let withdrawn = grant.withdrawn, record.at > withdrawn + skew { codes.append("withdrawn") }
        if grant.used >= grant.uses { codes.append("over_uses") }
        return codes
    }

    /// The `offline_gap` reason `record` earns after the chain's `last` record, or nil when
    /// it follows it.
    private static func gapReason(_ record: OfflineRecord, _ hash: String, last: Int64, lastHash: String) -> String? {
        let seq = record.seq
        if seq > last + 1 {
            let missing = seq - 1 == last + 1 ? "record \(last + 1)" : "records \(last + 1) to \(seq - 1)"
            return "seq_jump: \(missing) missing"
        }
        if seq == last + 1 {
            return record.previous.sameBytes(as: lastHash)
                ? nil : "chain_broken: record \(seq) does not follow record \(last) (changed or removed)"
        }
        if seq == last { return "seq_stale: record \(seq) again, not the one held" }
        return "seq_rewind: record \(seq) after record \(last)"
    }

    private static func chain(_ db: some SQLConnection, kid: String) throws(StoreError) -> (Int64, String) {
        guard
            let row = try db.textRows("SELECT CAST(seq AS TEXT), hash FROM offline_chains WHERE kid = ?1", [kid]).first
        else { return (0, "") }
        guard row.count == 2, let seq = row[0].flatMap({ Int64($0) }), let hash = row[1] else {
            throw StoreError("corrupt row in table offline_chains")
        }
        return (seq, hash)
    }

    /// The key's offline rows written in the last `OfflineUpload.rowWindow` seconds.
    private static func rowsInWindow(_ db: some SQLConnection, user: String, kid: String, now: Int64)
        throws(StoreError) -> Int
    {
        let rows = try db.textRows(
            #"""
            SELECT CAST(count(*) AS TEXT) FROM audit
             WHERE "user" = ?1 AND kid = ?2 AND event IN (\#(AuditEventKind.offlineLogin.sqlLiteral),
                   \#(AuditEventKind.offlineGap.sqlLiteral)) AND "time" >= CAST(?3 AS BIGINT)
            """#, [user, kid, String(now - OfflineUpload.rowWindow)])
        return rows.first?.first?.flatMap { Int($0) } ?? 0
    }

    /// Whether the login row of `record` is stored already (same user, key and `jti`).
    private static func isHeld(_ db: some SQLConnection, _ record: OfflineRecord) throws(StoreError) -> Bool {
        try !db.textRows(
            #"""
            SELECT id FROM audit WHERE "user" = ?1 AND kid = ?2 AND event = \#(AuditEventKind.offlineLogin.sqlLiteral)
               AND jti = ?3 LIMIT 1
            """#, [record.user, record.kid, record.jti]
        ).isEmpty
    }

    private static func grant(_ db: some SQLConnection, gid: String) throws(StoreError) -> Grant? {
        guard
            let row = try db.textRows(
                #"""
                SELECT "user", host, kid, CAST(issued AS TEXT), CAST(not_after AS TEXT), CAST(uses AS TEXT),
                       CAST(used AS TEXT), CAST(withdrawn AS TEXT)
                  FROM offline_grants WHERE gid = ?1
                """#, [gid]
            ).first
        else { return nil }
        guard row.count == 8, let user = row[0], let host = row[1], let kid = row[2],
            let issued = row[3].flatMap({ Int64($0) }), let notAfter = row[4].flatMap({ Int64($0) }),
            let uses = row[5].flatMap({ Int64($0) }), let used = row[6].flatMap({ Int64($0) })
        else { throw StoreError("corrupt row in table offline_grants") }
        return Grant(
            user: user, host: host, kid: kid, issued: issued, notAfter: notAfter, uses: uses, used: used,
            withdrawn: row[7].flatMap { Int64($0) })
    }
}

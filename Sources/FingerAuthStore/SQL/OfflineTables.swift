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

    /// Schema 12: an offline record's claimed time (its row's `time` is the receipt) and the
    /// uses of each grant its host reported so far.
    static func fromVersion11(integer: String) -> String {
        """
        ALTER TABLE audit ADD COLUMN claimed_time \(integer);
        ALTER TABLE offline_grants ADD COLUMN used INTEGER NOT NULL DEFAULT 0;
        """
    }

    /// How long a grant is kept after it ended or was withdrawn, seconds: the records a host
    /// uploads later are still judged against it (after that they name no grant).
    static let keptAfterEnd: Int64 = 30 * 86_400

    /// Whether any grant is held (`OfflineGrantStore.holdsOfflineGrants`).
    static func holdsAny(_ db: some SQLConnection) throws(StoreError) -> Bool {
        try !db.textRows("SELECT gid FROM offline_grants LIMIT 1", []).isEmpty
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
}

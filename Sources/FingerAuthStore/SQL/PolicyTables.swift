import FingerAuthDomain

/// The policy's tables, read and changed the same way on both stores, on whatever
/// connection the store hands in: a read connection for a snapshot, the store's write
/// transaction for a change, together with the change's audit row.
enum PolicyTables {
    /// Every rule, the host's labels and the user's lists, in one statement: one snapshot.
    static let snapshotSQL = """
        SELECT 'rule', CAST(id AS TEXT), CAST(position AS TEXT), stage, users, hosts, services, key_kind, action,
               offline_limits
          FROM policy_rules
        UNION ALL SELECT 'label', NULL, NULL, label, NULL, NULL, NULL, NULL, NULL, NULL FROM host_labels WHERE host = ?2
        UNION ALL SELECT 'list', NULL, NULL, list, NULL, NULL, NULL, NULL, NULL, NULL FROM user_lists WHERE "user" = ?1
        UNION ALL SELECT 'ek', NULL, NULL, ek_sha256, NULL, NULL, NULL, NULL, NULL, NULL FROM host_eks
         WHERE host = ?2 AND source = 'admin'
        """

    static func snapshot(_ db: some SQLConnection, user: String, host: String) throws(StoreError) -> PolicySnapshot {
        try loginReads(db, user: user, host: host, failureKeys: [], now: 0).policy
    }

    /// The shared failure windows of at most two keys (`rate_counters`, PostgreSQL only), in
    /// the snapshot's columns: key, count, end.
    static let windowsSQL = """
        UNION ALL SELECT 'window', key, CAST(count AS TEXT), CAST(expires AS TEXT), NULL, NULL, NULL, NULL, NULL, NULL
          FROM rate_counters WHERE key IN (?3, ?4) AND expires > CAST(?5 AS BIGINT)
        """

    /// The snapshot and, when `failureKeys` are given (at most two), their open windows at
    /// `now`: one statement, so one round trip to a remote database.
    static func loginReads(
        _ db: some SQLConnection, user: String, host: String, failureKeys: [String],
        now: Int64
    ) throws(StoreError) -> LoginReads {
        guard failureKeys.count <= 2 else { throw StoreError("login reads: more than two failure keys") }
        var rules: [PolicyRule] = []
        var labels: Set<String> = []
        var lists: Set<String> = []
        var provisioned: String?
        var windows: [String: FailureWindow] = [:]
        let rows =
            failureKeys.isEmpty
            ? try db.textRows(snapshotSQL, [user, host])
            : try db.textRows(
                snapshotSQL + "\n" + windowsSQL,
                [user, host, failureKeys[0], failureKeys.last ?? failureKeys[0], String(now)])
        for row in rows {
            guard row.count == 10, let kind = row[0] else { throw StoreError("corrupt policy snapshot") }
            switch kind {
            case "rule": rules.append(try rule(Array(row[1...])))
            case "label": if let label = row[3] { labels.insert(label) }
            case "ek": provisioned = row[3]
            case "window":
                guard let key = row[1], let count = row[2].flatMap({ Int($0) }), let end = row[3].flatMap({ Int64($0) })
                else {
                    throw StoreError("corrupt row in table rate_counters")
                }
                windows[key] = FailureWindow(count: count, end: end)
            default: if let list = row[3] { lists.insert(list) }
            }
        }
        let policy = PolicySnapshot(rules: rules, hostLabels: labels, userLists: lists, provisionedEK: provisioned)
        return LoginReads(user: user, host: host, policy: policy, keys: failureKeys, windows: windows)
    }

    static let rulesSQL = """
        SELECT CAST(id AS TEXT), CAST(position AS TEXT), stage, users, hosts, services, key_kind, action,
               offline_limits
          FROM policy_rules ORDER BY policy_rules.position
        """

    static func rules(_ db: some SQLConnection) throws(StoreError) -> [PolicyRule] {
        var rules: [PolicyRule] = []
        for row in try db.textRows(rulesSQL, []) { rules.append(try rule(row)) }
        return rules
    }

    /// (id, position, stage, users, hosts, services, key_kind, action, offline_limits) as text.
    static func rule(_ row: [String?]) throws(StoreError) -> PolicyRule {
        guard row.count == 9, let id = row[0].flatMap({ Int64($0) }), let position = row[1].flatMap({ Int($0) }),
            let stage = row[2].flatMap({ PolicyStage(rawValue: $0) }), let users = row[3], let hosts = row[4],
            let services = row[5], let kind = row[6], let action = row[7].flatMap({ PolicyAction(rawValue: $0) }),
            kind == "*" || KeyKind(rawValue: kind) != nil
        else {
            throw StoreError("corrupt row in table policy_rules")
        }
        var offline: OfflineLimits?
        if let text = row[8] {
            guard let limits = OfflineLimits(text: text) else { throw StoreError("corrupt row in table policy_rules") }
            offline = limits
        }
        func split(_ text: String) -> [String] { text.split(separator: ",").map(String.init) }
        return PolicyRule(
            id: id, position: position, stage: stage, users: split(users), hosts: split(hosts),
            services: split(services), keyKind: KeyKind(rawValue: kind), action: action, offline: offline)
    }

    /// Hosts known to the authenticator — those with an enrollment token, a label, a key or
    /// an EK pin — by name; with `page`, only those of the page (and only their labels read).
    static func hosts(_ db: some SQLConnection, page: Paging?) throws(StoreError) -> [HostSummary] {
        let rows = try db.textRows(
            """
            SELECT h.host,
                   (SELECT COUNT(*) FROM host_tokens t WHERE t.host = h.host AND t.revoked IS NULL),
                   (SELECT COUNT(*) FROM host_tokens t WHERE t.host = h.host),
                   (SELECT COUNT(*) FROM keys k WHERE k.host = h.host AND k.status <> 'revoked'),
                   e.host, e.ek_sha256, e.source, CAST(e.pinned AS TEXT), e.pinned_by
              FROM (SELECT host FROM host_tokens UNION SELECT host FROM host_labels UNION SELECT host FROM keys
                    UNION SELECT host FROM host_eks) AS h
              LEFT JOIN host_eks e ON e.host = h.host
             ORDER BY h.host\(page == nil ? "" : " LIMIT CAST(?1 AS BIGINT) OFFSET CAST(?2 AS BIGINT)")
            """, page.map { [String($0.limit), String($0.offset)] } ?? [])
        guard let first = rows.first?.first ?? nil, let last = rows.last?.first ?? nil else { return [] }
        let labels = try db.textRows(
            "SELECT host, label FROM host_labels WHERE host >= ?1 AND host <= ?2 ORDER BY host, label",
            [first, last])
        var summaries: [HostSummary] = []
        for row in rows {
            guard row.count == 9, let host = row[0] else { continue }
            summaries.append(
                HostSummary(
                    host: host, labels: labels.filter { $0[0] == host }.compactMap { $0[1] },
                    activeTokens: row[1].flatMap { Int($0) } ?? 0, tokens: row[2].flatMap { Int($0) } ?? 0,
                    keys: row[3].flatMap { Int($0) } ?? 0,
                    ek: row[4] == nil ? nil : try EKTables.pin(Array(row[4...]))))
        }
        return summaries
    }

    /// Every user list with its members, by name.
    static func lists(_ db: some SQLConnection) throws(StoreError) -> [(list: String, users: [String])] {
        var out: [(list: String, users: [String])] = []
        for row in try db.textRows(#"SELECT list, "user" FROM user_lists ORDER BY list, "user""#, []) {
            guard row.count == 2, let list = row[0], let user = row[1] else { continue }
            if out.last?.list == list { out[out.count - 1].users.append(user) } else { out.append((list, [user])) }
        }
        return out
    }

    private static func labels(_ db: some SQLConnection, _ host: String) throws(StoreError) -> [String] {
        try db.textRows("SELECT label FROM host_labels WHERE host = ?1 ORDER BY label", [host]).compactMap {
            $0.first ?? nil
        }
    }

    private static func members(_ db: some SQLConnection, _ list: String) throws(StoreError) -> [String] {
        try db.textRows(#"SELECT "user" FROM user_lists WHERE list = ?1 ORDER BY "user""#, [list]).compactMap {
            $0.first ?? nil
        }
    }

    /// Applies `change` on `db`, inside the caller's write transaction.
    static func apply(_ change: PolicyChange, _ db: some SQLConnection, now: Int64) throws(StoreError)
        -> PolicyChangeResult
    {
        switch change {
        case let .addRule(rule, position):
            let ids = try rules(db).map(\.id)
            let place = min(max(position ?? ids.count + 1, 1), ids.count + 1)
            let inserted = try db.textRows(
                """
                INSERT INTO policy_rules (position, stage, users, hosts, services, key_kind, action, created,
                                          offline_limits)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING CAST(id AS TEXT)
                """,
                [
                    String(ids.count + 1), rule.stage.rawValue, rule.users.joined(separator: ","),
                    rule.hosts.joined(separator: ","), rule.services.joined(separator: ","),
                    rule.keyKind?.rawValue ?? "*", rule.action.rawValue, String(now), rule.offline?.text,
                ])
            guard let id = inserted.first?.first.flatMap({ $0 }).flatMap({ Int64($0) }) else {
                throw StoreError("no id for the new rule")
            }
            try renumber(db, PolicyOrder.moving(id, to: place, in: ids + [id]))
            var added = rule
            added.id = id
            added.position = place
            return .changed(rule: added, before: "", after: "rule \(id) at \(place): \(added.summary)")
        case let .removeRule(id):
            let all = try rules(db)
            guard let rule = all.first(where: { $0.id == id }) else { return .unknownRule }
            _ = try db.textRows("DELETE FROM policy_rules WHERE id = ?1", [String(id)])
            try renumber(db, all.map(\.id).filter { $0 != id })
            return .changed(rule: rule, before: "rule \(id) at \(rule.position): \(rule.summary)", after: "")
        case let .moveRule(id, position):
            let all = try rules(db)
            guard let rule = all.first(where: { $0.id == id }) else { return .unknownRule }
            let order = PolicyOrder.moving(id, to: position, in: all.map(\.id))
            try renumber(db, order)
            let place = (order.firstIndex(of: id) ?? 0) + 1
            return .changed(rule: rule, before: "rule \(id) at \(rule.position)", after: "rule \(id) at \(place)")
        case let .label(host, labels):
            let known = try db.textRows("SELECT 1 FROM host_tokens WHERE host = ?1 LIMIT 1", [host])
            guard !known.isEmpty else { return .unknownHost }
            let before = try Self.labels(db, host)
            for label in labels {
                _ = try db.textRows(
                    "INSERT INTO host_labels (host, label) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                    [host, label])
            }
            return .changed(
                rule: nil, before: "labels of \(host): \(before.joined(separator: ","))",
                after: "labels of \(host): \(try Self.labels(db, host).joined(separator: ","))")
        case let .unlabel(host, labels):
            let before = try Self.labels(db, host)
            let going = labels.map { wanted in before.filter { wanted.contains($0) } } ?? before
            guard !going.isEmpty else { return .nothingToRemove }
            for label in going {
                _ = try db.textRows("DELETE FROM host_labels WHERE host = ?1 AND label = ?2", [host, label])
            }
            return .changed(
                rule: nil, before: "labels of \(host): \(before.joined(separator: ","))",
                after: "labels of \(host): \(try Self.labels(db, host).joined(separator: ","))")
        case let .addUsers(list, users):
            let before = try members(db, list)
            for user in users {
                _ = try db.textRows(
                    #"INSERT INTO user_lists (list, "user") VALUES (?1, ?2) ON CONFLICT DO NOTHING"#,
                    [list, user])
            }
            return .changed(
                rule: nil, before: "list \(list): \(before.joined(separator: ","))",
                after: "list \(list): \(try members(db, list).joined(separator: ","))")
        case let .removeUsers(list, users):
            let before = try members(db, list)
            let going = users.map { wanted in before.filter { wanted.contains($0) } } ?? before
            guard !going.isEmpty else { return .nothingToRemove }
            for user in going {
                _ = try db.textRows(#"DELETE FROM user_lists WHERE list = ?1 AND "user" = ?2"#, [list, user])
            }
            return .changed(
                rule: nil, before: "list \(list): \(before.joined(separator: ","))",
                after: "list \(list): \(try members(db, list).joined(separator: ","))")
        }
    }

    /// Positions 1…n in the order of `ids`.
    private static func renumber(_ db: some SQLConnection, _ ids: [Int64]) throws(StoreError) {
        for (index, id) in ids.enumerated() {
            _ = try db.textRows(
                "UPDATE policy_rules SET position = ?1 WHERE id = ?2 AND position <> ?1",
                [String(index + 1), String(id)])
        }
    }
}

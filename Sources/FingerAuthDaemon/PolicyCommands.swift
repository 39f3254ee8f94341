import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd policy list|add|remove|move|test`, `hosts list|label|unlabel` and
/// `users list|add|remove`: the central policy. Every change is one transaction with its
/// audit row (event `policy_change`, peer `local`, reason `by ADMIN: before -> after`,
/// the rule's id), and every instance on the database sees it from its next request.
enum PolicyCommands {
    // MARK: policy

    static func list(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(arguments, valued: [], switches: ["json"], command: "policy list")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let rules = try store.policyRules()
            if options.flag("json") {
                print(JSONEncoding.encode(.array(rules.map(json))))
            } else {
                Admin.printTable(
                    ["POS", "ID", "STAGE", "USERS", "HOSTS", "SERVICES", "KEY", "ACTION", "OFFLINE"],
                    rules.map {
                        [
                            String($0.position), String($0.id), $0.stage.rawValue, $0.users.joined(separator: ","),
                            $0.hosts.joined(separator: ","), $0.services.joined(separator: ","),
                            $0.keyKind?.rawValue ?? "*",
                            $0.action.rawValue,
                            $0.offline.map { "\($0.seconds / 3600)h,\($0.uses)" } ?? "-",
                        ]
                    })
                print(
                    "no rule matches: allow (add a last rule with --users '*' --hosts '*' --action deny to refuse instead)"
                )
            }
            return 0
        }
    }

    static func add(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "policy add"
        let (options, db) = try Admin.options(
            arguments,
            valued: [
                "stage", "users", "hosts", "services", "key", "action", "position", "offline-hours", "offline-uses",
            ],
            command: command)
        var position: Int?
        if let text = options.optional("position") {
            guard let value = Int(text), value >= 1 else {
                throw UsageError(message: "policy add: --position is 1 or more")
            }
            position = value
        }
        let stage = try options.required("stage", command: command)
        let action = try options.required("action", command: command)
        let users = try options.required("users", command: command)
        let hosts = try options.required("hosts", command: command)
        let rule: PolicyRule
        do {
            rule = try PolicyRuleText.rule(
                stage: stage, users: users, hosts: hosts, services: options.optional("services"),
                key: options.optional("key"), action: action, offlineHours: options.optional("offline-hours"),
                offlineUses: options.optional("offline-uses")
            ) { "--" + $0 }
        } catch {
            throw UsageError(message: "policy add: " + error.message)
        }
        let status = change(db, .addRule(rule, position: position)) { result in
            if case let .changed(added?, _, _) = result {
                print("added rule \(added.id) at position \(added.position): \(added.summary)")
            }
        }
        if status == 0 { warnAboutUnknownNames(db, rule) }
        return status
    }

    /// A `list:` or `label:` that nothing carries yet matches nobody through it: a deny rule
    /// with a misspelt list refuses nobody. Said on stderr; the rule stays (the list may
    /// be filled next).
    private static func warnAboutUnknownNames(_ db: String, _ rule: PolicyRule) {
        _ = Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let lists = Set(try store.userLists().map(\.list))
            let labels = Set(try store.hostSummaries().flatMap(\.labels))
            for user in rule.users where user.hasPrefix("list:") && !lists.contains(String(user.dropFirst(5))) {
                let name = user.dropFirst(5)
                printError(
                    "fingerauthd: warning: there is no user list '\(name)' yet: the rule matches nobody through it "
                        + "until 'fingerauthd users add --list \(name) --users …'")
            }
            for host in rule.hosts where host.hasPrefix("label:") && !labels.contains(String(host.dropFirst(6))) {
                let name = host.dropFirst(6)
                printError(
                    "fingerauthd: warning: no host has the label '\(name)' yet: the rule matches no host through it "
                        + "until 'fingerauthd hosts label --host HOST --labels \(name)'")
            }
            return 0
        }
    }

    static func remove(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(arguments, valued: ["id"], command: "policy remove")
        let id = try ruleID(options, command: "policy remove")
        return change(db, .removeRule(id: id)) { _ in print("removed rule \(id)") }
    }

    static func move(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "policy move"
        let (options, db) = try Admin.options(arguments, valued: ["id", "position"], command: command)
        let id = try ruleID(options, command: command)
        guard let position = Int(try options.required("position", command: command)), position >= 1 else {
            throw UsageError(message: "policy move: --position is 1 or more")
        }
        return change(db, .moveRule(id: id, position: position)) { result in
            if case let .changed(_, _, after) = result { print("moved: \(after)") }
        }
    }

    /// `policy test --user U --host H [--service S] [--hardware | --provisioned-ek] [--stage registration]`:
    /// the decision a request would get now, and the rule that makes it. `--provisioned-ek`:
    /// a TPM key attested by the EK an admin provisioned for the host (when it has one).
    static func test(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "policy test"
        let (options, db) = try Admin.options(
            arguments, valued: ["user", "host", "service", "stage"],
            switches: ["hardware", "provisioned-ek", "json"], command: command)
        let user = try options.required("user", command: command)
        if let problem = UserName.problem(user) {
            throw UsageError(
                message: "policy test: '\(LogText.clean(user, limit: 64))' is not a user name (\(problem)); "
                    + "the server refuses it at registration and login before any rule")
        }
        let host = try options.required("host", command: command)
        let stage = PolicyStage(rawValue: options.optional("stage") ?? "login")
        guard let stage else {
            throw UsageError(message: "policy test: --stage is login, registration, offline or approve")
        }
        let service = options.optional("service")
        if stage != .registration && service == nil {
            throw UsageError(message: "policy test: a login needs --service (the PAM service, e.g. sudo)")
        }
        let provisioned = options.flag("provisioned-ek")
        var request = PolicyRequest(
            stage: stage, user: user, host: host, service: stage == .registration ? nil : service,
            keyKind: options.flag("hardware") || provisioned ? .hardware : .software)
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let snapshot = try store.policySnapshot(user: user, host: host)
            if provisioned { request.ek = snapshot.provisionedEK }
            let decision = snapshot.decide(request)
            if options.flag("json") {
                print(
                    JSONEncoding.encode(
                        .object([
                            ("decision", .string((decision.allowed ? PolicyAction.allow : .deny).rawValue)),
                            ("rule", decision.rule.map { .integer($0.id) } ?? .null),
                        ])))
            } else {
                print(decision.summary)
            }
            return decision.allowed ? 0 : 3
        }
    }

    // MARK: hosts

    static func hosts(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(arguments, valued: [], switches: ["json"], command: "hosts list")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let hosts = try store.hostSummaries()
            if options.flag("json") {
                print(
                    JSONEncoding.encode(
                        .array(
                            hosts.map { h in
                                .object([
                                    ("host", .string(h.host)), ("labels", .array(h.labels.map(JSONValue.string))),
                                    ("tokens", .integer(Int64(h.tokens))),
                                    ("active_tokens", .integer(Int64(h.activeTokens))),
                                    ("keys", .integer(Int64(h.keys))), ("ek", EKCommands.json(h.ek)),
                                ])
                            })))
            } else {
                Admin.printTable(
                    ["HOST", "LABELS", "TOKENS", "KEYS", "EK"],
                    hosts.map {
                        [
                            $0.host, $0.labels.joined(separator: ","), "\($0.activeTokens) of \($0.tokens) active",
                            String($0.keys),
                            $0.ek.map { "\($0.ek) (\($0.source == .admin ? "admin" : "tofu: first attestation"))" }
                                ?? "",
                        ]
                    })
            }
            return 0
        }
    }

    static func label(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "hosts label"
        let (options, db) = try Admin.options(arguments, valued: ["host", "labels"], command: command)
        let host = try options.required("host", command: command)
        let labels = try names(options.required("labels", command: command), field: "--labels")
        return change(db, .label(host: host, labels: labels)) { result in
            if case let .changed(_, _, after) = result { print(after) }
        }
    }

    static func unlabel(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "hosts unlabel"
        let (options, db) = try Admin.options(
            arguments, valued: ["host", "labels"], switches: ["all"], command: command)
        let host = try options.required("host", command: command)
        let labels = try options.optional("labels").map { (text) throws(UsageError) in
            try names(text, field: "--labels")
        }
        guard (labels == nil) == options.flag("all") else {
            throw UsageError(message: "hosts unlabel: give --labels L1,L2 or --all")
        }
        return change(db, .unlabel(host: host, labels: labels)) { result in
            if case let .changed(_, _, after) = result { print(after) }
        }
    }

    // MARK: users

    static func users(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(arguments, valued: [], switches: ["json"], command: "users list")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let lists = try store.userLists()
            if options.flag("json") {
                print(
                    JSONEncoding.encode(
                        .array(
                            lists.map {
                                .object([("list", .string($0.list)), ("users", .array($0.users.map(JSONValue.string)))])
                            })))
            } else {
                Admin.printTable(["LIST", "USERS"], lists.map { [$0.list, $0.users.joined(separator: ",")] })
            }
            return 0
        }
    }

    static func addUsers(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "users add"
        let (options, db) = try Admin.options(arguments, valued: ["list", "users"], command: command)
        let list = try names(options.required("list", command: command), field: "--list")
        let users = try names(options.required("users", command: command), field: "--users")
        guard list.count == 1 else { throw UsageError(message: "users add: --list names one list") }
        for user in users {
            if let problem = UserName.problem(user) {
                throw UsageError(
                    message:
                        "users add: '\(LogText.clean(user, limit: 64))' is not a user name (\(problem); \(UserName.rule))"
                )
            }
        }
        return change(db, .addUsers(list: list[0], users: users)) { result in
            if case let .changed(_, _, after) = result { print(after) }
        }
    }

    static func removeUsers(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "users remove"
        let (options, db) = try Admin.options(
            arguments, valued: ["list", "users"], switches: ["all"], command: command)
        let list = try names(options.required("list", command: command), field: "--list")
        guard list.count == 1 else { throw UsageError(message: "users remove: --list names one list") }
        let users = try options.optional("users").map { (text) throws(UsageError) in try names(text, field: "--users") }
        guard (users == nil) == options.flag("all") else {
            throw UsageError(message: "users remove: give --users U1,U2 or --all")
        }
        return change(db, .removeUsers(list: list[0], users: users)) { result in
            if case let .changed(_, _, after) = result { print(after) }
        }
    }

    // MARK: shared

    /// Runs `change` with its audit row; prints with `done` on success, says why not otherwise.
    private static func change(_ db: String, _ change: PolicyChange, done: (PolicyChangeResult) -> Void) -> Int32 {
        let admin = Admin.operatorName()
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let event = Admin.byAdmin(AuditEvent(event: .policyChange, outcome: .accept), admin)
            let result = try store.changePolicy(change, audit: event, now: now)
            switch result {
            case .changed:
                done(result)
                return 0
            case .unknownRule:
                printError("fingerauthd: no such rule; see 'fingerauthd policy list'")
            case .unknownHost:
                printError(
                    "fingerauthd: that host has no enrollment token ('fingerauthd token create --host HOST'); see 'fingerauthd hosts list'"
                )
            case .nothingToRemove:
                printError("fingerauthd: nothing to remove")
            }
            return 1
        }
    }

    private static func ruleID(_ options: Options, command: String) throws(UsageError) -> Int64 {
        guard let id = Int64(try options.required("id", command: command)), id >= 1 else {
            throw UsageError(message: "\(command): --id is a rule id from 'fingerauthd policy list'")
        }
        return id
    }

    private static func patterns(_ text: String, field: String) throws(UsageError) -> [String] {
        do { return try PolicyRuleText.patterns(text, field: field) } catch { throw UsageError(message: error.message) }
    }

    /// Plain names (labels, lists, users): no `*`, no `list:`/`label:` prefix.
    private static func names(_ text: String, field: String) throws(UsageError) -> [String] {
        let parts = try patterns(text, field: field)
        for part in parts where part == "*" || part.contains(":") {
            throw UsageError(message: "\(field): '\(part)' is not a plain name")
        }
        return parts
    }

    static func json(_ rule: PolicyRule) -> JSONValue {
        .object([
            ("id", .integer(rule.id)), ("position", .integer(Int64(rule.position))),
            ("stage", .string(rule.stage.rawValue)),
            ("users", .array(rule.users.map(JSONValue.string))), ("hosts", .array(rule.hosts.map(JSONValue.string))),
            ("services", .array(rule.services.map(JSONValue.string))), ("key", .string(rule.keyKind?.rawValue ?? "*")),
            ("action", .string(rule.action.rawValue)),
            (
                "offline",
                rule.offline.map {
                    .object([("hours", .integer($0.seconds / 3600)), ("uses", .integer(Int64($0.uses)))])
                }
                    ?? .null
            ),
        ])
    }
}

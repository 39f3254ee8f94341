import FingerAuthCore
import FingerAuthDomain
import FingerAuthWeb

/// The policy page: the rules in the order they are evaluated, with their ids (the ids a
/// refusal's audit row and 403 name); add a rule, move one up or down, remove one, and test
/// a case against the rules as they are now. Changes go through the store's
/// `changePolicy`, one transaction with its `policy_change` audit row, as the
/// `fingerauthd policy` commands do; the rule text is checked by `PolicyRuleText`, as theirs.
extension AdminConsole {
    static let policyQueryNames = ["test_user", "test_host", "test_service", "test_stage", "test_key"]

    func policyPage(_ request: HTTPRequest?, _ who: SignedIn, message: String? = nil, error: String? = nil)
        throws(StoreError) -> String
    {
        let rules = try store.policyRules()
        let rows = rules.map { rule -> [String] in
            var moves: [String] = []
            if rule.position > 1 {
                moves.append(
                    ConsoleHTML.button(
                        "Up", action: "/policy/move",
                        fields: [("id", String(rule.id)), ("position", String(rule.position - 1))],
                        csrf: who.csrf, cls: "up"))
            }
            if rule.position < rules.count {
                moves.append(
                    ConsoleHTML.button(
                        "Down", action: "/policy/move",
                        fields: [("id", String(rule.id)), ("position", String(rule.position + 1))],
                        csrf: who.csrf, cls: "down"))
            }
            moves.append(
                ConsoleHTML.button(
                    "Remove", action: "/policy/remove", fields: [("id", String(rule.id))],
                    csrf: who.csrf, cls: "danger"))
            return [
                String(rule.position), String(rule.id), rule.stage.rawValue,
                ConsoleHTML.escape(rule.users.joined(separator: ",")),
                ConsoleHTML.escape(rule.hosts.joined(separator: ",")),
                ConsoleHTML.escape(rule.services.joined(separator: ",")), rule.keyKind?.rawValue ?? "*",
                rule.action.rawValue,
                moves.joined(separator: " "),
            ]
        }
        var body = ""
        body += ConsoleHTML.message(message)
        if let error { body += "<p class=\"error\" id=\"policy-error\">\(ConsoleHTML.escape(error))</p>" }
        body += """
            <p>The first rule of a request's stage that matches decides; when none matches, the request is allowed.</p>
            \(ConsoleHTML.table(id: "rules", headers: ["pos", "id", "stage", "users", "hosts", "services", "key", "action", ""], rows: rows))
            <h2>Test a case</h2>
            \(testForm(request))
            <h2>Add a rule</h2>
            <form id="add-rule" class="add" method="post" action="/policy/add">\(ConsoleHTML.csrfField(who.csrf))
            <p>\(select("stage", ["login", "registration"])) \(select("action", PolicyAction.allCases.map(\.rawValue)))
            \(select("key", ["*"] + KeyKind.allCases.map(\.rawValue)))</p>
            <p><label>users <input name="users" placeholder="alice,list:dba or *" required></label>
            <label>hosts <input name="hosts" placeholder="db1,label:prod or *" required></label>
            <label>services <input name="services" placeholder="sudo,sshd (login only; empty: *)"></label>
            <label>position <input name="position" size="4" placeholder="last"></label></p>
            <p><button type="submit">Add rule</button></p></form>
            """
        let lists = try store.userLists()
        if !lists.isEmpty {
            body +=
                "<h2>User lists</h2>"
                + ConsoleHTML.table(
                    id: "lists", headers: ["list", "users"],
                    rows: lists.map {
                        [ConsoleHTML.escape($0.list), ConsoleHTML.escape($0.users.joined(separator: ", "))]
                    })
        }
        return ConsoleHTML.page(title: "Policy", admin: who.admin, csrf: who.csrf, current: "/policy", body: body)
    }

    private func select(_ name: String, _ values: [String], selected: String? = nil, label: String? = nil) -> String {
        let options = values.map { value in
            "<option\(value == selected ? " selected" : "")>\(ConsoleHTML.escape(value))</option>"
        }.joined()
        return "<label>\(label ?? name) <select name=\"\(name)\">\(options)</select></label>"
    }

    /// The test form, and the decision when the request asked for one (a GET: it changes nothing).
    private func testForm(_ request: HTTPRequest?) -> String {
        let value = { (name: String) in request.flatMap { ConsoleForms.query($0, name) } }
        func input(_ label: String, _ name: String) -> String {
            "<label>\(label) <input name=\"\(name)\" value=\"\(ConsoleHTML.escape(value(name) ?? ""))\"></label>"
        }
        var form = """
            <form id="test" class="test" method="get" action="/policy"><p>\(input("user", "test_user")) \(input("host", "test_host"))
            \(input("service", "test_service")) \(select("test_stage", ["login", "registration"], selected: value("test_stage"), label: "stage"))
            \(select("test_key", KeyKind.allCases.map(\.rawValue), selected: value("test_key"), label: "key"))
            <button type="submit">Test</button></p></form>
            """
        guard let user = value("test_user"), let host = value("test_host") else { return form }
        if let problem = UserName.problem(user) {
            return form + "<p class=\"error\" id=\"decision\">Not a user name (\(ConsoleHTML.escape(problem))): "
                + "the authenticator refuses it at registration and login before any rule.</p>"
        }
        let stage = PolicyStage(rawValue: value("test_stage") ?? "login") ?? .login
        let service = value("test_service")
        if stage == .login && service == nil {
            return form + "<p class=\"error\" id=\"decision\">A login needs a service (the PAM service, e.g. sudo).</p>"
        }
        let request = PolicyRequest(
            stage: stage, user: user, host: host, service: stage == .login ? service : nil,
            keyKind: KeyKind(rawValue: value("test_key") ?? "software") ?? .software)
        do {
            let decision = try store.policySnapshot(user: user, host: host).decide(request)
            form += "<p class=\"decision\" id=\"decision\">\(ConsoleHTML.escape(decision.summary))</p>"
        } catch {
            form += "<p class=\"error\" id=\"decision\">The policy cannot be read right now.</p>"
        }
        return form
    }

    /// `/policy/add`, `/policy/move`, `/policy/remove`: one change, audited as the admin's.
    func policyAction(_ path: String, _ fields: [String: String], _ who: SignedIn) -> HTTPResponse {
        let change: PolicyChange
        switch path {
        case "/policy/add":
            var position: Int?
            if let text = fields["position"], !text.isEmpty {
                guard let value = Int(text), value >= 1 else {
                    return policyRefusal(who, "position is a number, 1 or more.")
                }
                position = value
            }
            do {
                let rule = try PolicyRuleText.rule(
                    stage: fields["stage"] ?? "", users: fields["users"] ?? "",
                    hosts: fields["hosts"] ?? "", services: fields["services"],
                    key: fields["key"], action: fields["action"] ?? ""
                ) { $0 }
                change = .addRule(rule, position: position)
            } catch {
                return policyRefusal(who, error.message)
            }
        case "/policy/move":
            guard let id = fields["id"].flatMap({ Int64($0) }), let position = fields["position"].flatMap({ Int($0) }),
                position >= 1
            else {
                return policyRefusal(who, "No such rule or position.")
            }
            change = .moveRule(id: id, position: position)
        default:
            guard let id = fields["id"].flatMap({ Int64($0) }) else { return policyRefusal(who, "No such rule.") }
            change = .removeRule(id: id)
        }
        let base = AuditEvent(
            event: .policyChange, outcome: .accept, reason: .detail("by \(who.admin) (console)"),
            peer: LogText.clean(who.address), admin: who.admin)
        do {
            let result = try store.changePolicy(change, audit: base, now: who.now)
            let message: String
            switch result {
            case let .changed(rule, _, after):
                log.message("console: \(who.admin) changed the policy: \(LogText.clean(after, limit: 200))")
                switch change {
                case .addRule: message = rule.map { "Added rule \($0.id) at position \($0.position)." } ?? "Added."
                case let .moveRule(id, _): message = "Moved rule \(id)."
                case let .removeRule(id): message = "Removed rule \(id)."
                default: message = "Changed."
                }
            case .unknownRule: return policyRefusal(who, "No such rule.", status: 404)
            case .unknownHost, .nothingToRemove: return policyRefusal(who, "Nothing changed.", status: 404)
            }
            return html(200, try policyPage(nil, who, message: message))
        } catch {
            log.message("console: policy change: \(error)")
            return unavailable(who, writing: true)
        }
    }

    private func policyRefusal(_ who: SignedIn, _ error: String, status: Int = 400) -> HTTPResponse {
        do {
            return html(status, try policyPage(nil, who, error: error))
        } catch {
            return unavailable(who, writing: false)
        }
    }
}

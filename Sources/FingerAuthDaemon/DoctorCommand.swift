import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd doctor [--json]`: reads the registry and lists what a rule of today refuses
/// but an older release stored — user names that break the user-name rule (`UserName`) in
/// keys, the audit log, policy rules, user lists and console accounts. Nothing is changed
/// or dropped: the admin decides (revoke, remove, re-register). Exit status 0 when nothing
/// is found, 1 when something is (or the registry cannot be read), 2 on a usage error.
enum DoctorCommand {
    /// One stored name that breaks the rule, and where it is.
    struct Finding {
        let kind: String
        let name: String
        let problem: String
        /// Where, for the table (`kid=… host=… active`, `rule 3`, `list dba`, `12 rows`).
        let place: String
        /// The same as JSON members.
        let details: [(String, JSONValue)]
    }

    static func run(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(arguments, valued: [], switches: ["json"], command: "doctor")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let findings = try userNameFindings(store)
            if options.flag("json") {
                print(
                    JSONEncoding.encode(
                        .array(
                            findings.map { finding in
                                .object(
                                    [
                                        ("kind", .string(finding.kind)), ("name", .string(finding.name)),
                                        ("problem", .string(finding.problem)),
                                    ] + finding.details)
                            })))
            } else if findings.isEmpty {
                print("user names: every stored name follows the rule (\(UserName.rule))")
            } else {
                Admin.printTable(
                    ["KIND", "NAME", "WHERE", "PROBLEM"],
                    findings.map {
                        [$0.kind, LogText.clean($0.name, limit: 64), $0.place, $0.problem]
                    })
                print(
                    """

                    \(findings.count) stored name\(findings.count == 1 ? "" : "s") break\(findings.count == 1 ? "s" : "") \
                    the user-name rule (\(UserName.rule)).
                    The server refuses such names at registration, login, /oauth2/token and in policy commands;
                    what is stored stays until you act: revoke such keys (fingerauthd keys revoke --kid KID) and
                    register the person under a valid name; remove such rules (policy remove --id ID) and list
                    members (users remove --list L --users U); audit rows go with their retention. A console
                    account so named still signs in: make its admin a new one (fingerauthd admin create NAME)
                    and remove the old one (fingerauthd admin remove OLD).
                    """)
            }
            return findings.isEmpty ? 0 : 1
        }
    }

    /// Every stored user name that breaks the rule: keys, audit users, policy rules' user
    /// patterns, user-list members, console accounts.
    static func userNameFindings(_ store: any AuthStorage) throws(StoreError) -> [Finding] {
        var out: [Finding] = []
        func check(_ kind: String, _ name: String, place: String, _ details: [(String, JSONValue)]) {
            guard let problem = UserName.problem(name) else { return }
            out.append(Finding(kind: kind, name: name, problem: problem, place: place, details: details))
        }
        for key in try store.listKeys() {
            check(
                "key", key.user, place: "kid=\(key.kid) host=\(LogText.clean(key.host)) \(key.status.rawValue)",
                [("kid", .string(key.kid)), ("host", .string(key.host)), ("status", .string(key.status.rawValue))])
        }
        for (user, rows) in try store.auditUsers() {
            check("audit", user, place: "\(rows) row\(rows == 1 ? "" : "s")", [("rows", .integer(rows))])
        }
        for rule in try store.policyRules() {
            for user in rule.users where user != "*" && !user.hasPrefix("list:") {
                check("policy", user, place: "rule \(rule.id)", [("rule", .integer(rule.id))])
            }
        }
        for (list, users) in try store.userLists() {
            for user in users {
                check("user-list", user, place: "list \(LogText.clean(list, limit: 64))", [("list", .string(list))])
            }
        }
        for (name, _) in try store.listAdmins() {
            check("admin", name, place: "console account", [])
        }
        return out
    }
}

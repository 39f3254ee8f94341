import FingerAuthCore
import FingerAuthDomain
import FingerAuthWeb

/// The approvals page: the remote approvals of one user or one host (linked from the keys
/// and hosts pages), or the newest of all, with who asked, from where, what became of
/// each and which workstation decided it. A "Not me" is highlighted: someone asked in the
/// user's name who was not the user.
extension AdminConsole {
    /// How many approvals the page shows.
    static let approvalsShown = 200

    func approvalsPage(_ request: HTTPRequest, _ who: SignedIn) throws(StoreError) -> String {
        let user = ConsoleForms.query(request, "user")
        let host = ConsoleForms.query(request, "host")
        let approvals = try store.approvals(user: user, host: host, limit: Self.approvalsShown)
        var attention: [Int: String] = [:]
        let rows = approvals.enumerated().map { index, approval -> [String] in
            var status = ConsoleHTML.escape(approval.status.rawValue)
            if approval.status == .denied {
                attention[index] = "attention"
                status = "<mark title=\"Not me: the user said this request was not theirs\">denied</mark>"
            }
            let caller = approval.caller.isEmpty ? "" : "<em>asked by \(ConsoleHTML.escape(approval.caller))</em>"
            let where_ = [approval.clientAddress, approval.terminal].filter { !$0.isEmpty }
            return [
                ConsoleHTML.time(approval.created), status, Self.approvalsLink("user", approval.user) + " " + caller,
                Self.approvalsLink("host", approval.host), ConsoleHTML.escape(approval.service),
                ConsoleHTML.escape(where_.joined(separator: " on ")), ConsoleHTML.escape(approval.code),
                approval.decided.map(ConsoleHTML.time) ?? "",
                ConsoleHTML.escape(approval.workstation ?? ""),
                "<code>\(ConsoleHTML.escape(approval.decidedKid ?? ""))</code>",
            ]
        }
        let scope =
            switch (user, host) {
            case let (user?, host?): "of \(ConsoleHTML.escape(user)) on \(ConsoleHTML.escape(host))"
            case let (user?, nil): "of user \(ConsoleHTML.escape(user))"
            case let (nil, host?): "asked by host \(ConsoleHTML.escape(host))"
            case (nil, nil): "of every user and host"
            }
        let body =
            "<p id=\"scope\">Remote approvals \(scope), newest first (at most \(Self.approvalsShown)). "
            + "A server asks that a user approve a login there with a finger on their own workstation; "
            + "<mark>denied</mark> is the user's \"Not me\". "
            + "<a href=\"/approvals\">All approvals</a></p>"
            + ConsoleHTML.table(
                id: "approvals",
                headers: [
                    "asked (UTC)", "status", "user", "host", "service", "from", "code", "ended (UTC)",
                    "workstation", "decided by key",
                ], rows: rows, classes: attention)
        return ConsoleHTML.page(
            title: "Approvals", admin: who.admin, csrf: who.csrf, current: "/approvals", body: body)
    }

    /// A link to the approvals of one user or host, showing its name.
    static func approvalsLink(_ name: String, _ value: String) -> String {
        "<a href=\"/approvals?\(name)=\(percentEncode(value))\">\(ConsoleHTML.escape(value))</a>"
    }
}

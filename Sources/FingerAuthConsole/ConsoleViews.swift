import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthWeb

/// The console's pages and its two actions.
extension AdminConsole {
    static let week: Int64 = 7 * 86_400

    // MARK: Overview

    func overviewPage(_ who: SignedIn) throws(StoreError) -> String {
        let since = (who.now / 3600 - 167) * 3600
        let hours = try store.loginsPerHour(since: since)
        let accepted = hours.reduce(Int64(0)) { $0 + $1.accepted }
        let refused = hours.reduce(Int64(0)) { $0 + $1.refused }
        let reasons = try store.topRefusals(since: since, limit: 10)
        let counts = try store.keyCounts()
        let keyText = counts.map { "<span id=\"keys-\($0.0.rawValue)\">\($0.0.rawValue) keys: \($0.1)</span>" }.joined()
        let body = """
            <p class="figures"><span id="accepted">Accepted logins (7 days): \(accepted)</span>\
            <span id="refused">Refused logins (7 days): \(refused)</span>\(keyText)</p>
            <h2>Logins per hour, last 7 days (UTC)</h2>
            \(ConsoleChart.svg(hours: hours, from: since))
            <h2>Top refusal reasons, last 7 days</h2>
            \(ConsoleHTML.table(id: "reasons", headers: ["reason", "count"],
                                rows: reasons.map { [ConsoleHTML.escape($0.reason), String($0.count)] }))
            """
        return ConsoleHTML.page(title: "Overview", admin: who.admin, csrf: who.csrf, current: "/overview", body: body)
    }

    // MARK: Audit log

    /// The audit filters of a request, or what is wrong with its times.
    func auditQuery(_ request: HTTPRequest) -> (query: ConsoleAuditQuery, problem: String?) {
        var problem: String?
        func time(_ name: String) -> Int64? {
            guard let text = ConsoleForms.query(request, name) else { return nil }
            guard let value = ConsoleHTML.parseTime(text) else {
                problem = "\(name): '\(text)' is not a UTC time of the form YYYY-MM-DD or YYYY-MM-DD HH:MM."
                return nil
            }
            return value
        }
        let query = ConsoleAuditQuery(
            user: ConsoleForms.query(request, "user"), host: ConsoleForms.query(request, "host"),
            event: ConsoleForms.query(request, "event"), outcome: ConsoleForms.query(request, "outcome"),
            since: time("from"), until: time("to"),
            beforeID: ConsoleForms.query(request, "before").flatMap { Int64($0) }, limit: 50)
        return (query, problem)
    }

    func auditPage(_ request: HTTPRequest, _ who: SignedIn) throws(StoreError) -> String {
        let (query, problem) = auditQuery(request)
        // A time that does not parse filters nothing: no rows rather than rows it did not ask for.
        let records = problem == nil ? try store.consoleAudit(query) : []
        func field(_ name: String, _ value: String?) -> String {
            "<label>\(name) <input name=\"\(name)\" value=\"\(ConsoleHTML.escape(value ?? ""))\"></label>"
        }
        let filters = [
            ("user", query.user), ("host", query.host), ("event", query.event), ("outcome", query.outcome),
            ("from", ConsoleForms.query(request, "from")), ("to", ConsoleForms.query(request, "to")),
        ]
        let kept = filters.compactMap { name, value in value.map { "\(name)=\(Self.percentEncode($0))" } }
        var attention: [Int: String] = [:]
        let rows = records.enumerated().map { index, record -> [String] in
            let e = record.event
            let user =
                e.user.map(ConsoleHTML.escape) ?? e.claimedUser.map { "<em>claimed: \(ConsoleHTML.escape($0))</em>" }
                ?? ""
            var event = ConsoleHTML.escape(e.event.name)
            if Self.needsAttention(e) {
                attention[index] = "attention"
                event =
                    "<mark title=\"an offline login no grant covers, a gap in a host's records, or a user's Not me\">\(event)</mark>"
            }
            return [
                ConsoleHTML.time(record.time), event, ConsoleHTML.escape(e.outcome.name), user,
                ConsoleHTML.escape(e.host ?? ""), Self.service(e), "<code>\(ConsoleHTML.escape(e.kid ?? ""))</code>",
                ConsoleHTML.escape(e.reason?.text ?? ""), ConsoleHTML.escape(e.peer ?? ""), String(e.count),
                ConsoleHTML.escape(e.admin ?? ""),
            ]
        }
        var body = """
            <form id="filter" method="get" action="/audit">\(filters.map { field($0.0, $0.1) }.joined())\
            <button type="submit">Filter</button> <small>times in UTC: YYYY-MM-DD or YYYY-MM-DD HH:MM; from is \
            included, to is not</small></form>\(problem.map { "<p class=\"error\" id=\"filter-error\">\(ConsoleHTML.escape($0))</p>" } ?? "")
            <p><a id="csv" href="/audit.csv\(kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))">Export CSV</a></p>
            \(ConsoleHTML.table(id: "audit", headers: ["time (UTC)", "event", "outcome", "user", "host", "service", "kid", "reason", "peer", "count", "admin"], rows: rows, classes: attention))
            """
        if records.count == query.limit, let last = records.last {
            body +=
                "<p><a id=\"older\" href=\"/audit?\((kept + ["before=\(last.id)"]).joined(separator: "&"))\">Older</a></p>"
        }
        return ConsoleHTML.page(title: "Audit log", admin: who.admin, csrf: who.csrf, current: "/audit", body: body)
    }

    /// The row's PAM service (`sudo`, `fingerauth-test`), and beside `fingerauth-agent` the
    /// service the screen locker named, which nothing vouches for (in small type).
    static func service(_ event: AuditEvent) -> String {
        let service = ConsoleHTML.escape(event.service ?? "")
        guard let client = event.clientService else { return service }
        return service + " <small title=\"the service the client named\">(\(ConsoleHTML.escape(client)))</small>"
    }

    /// A row a person should look at: an offline login that no grant covers (or made after
    /// its key's revocation), a gap in a host's offline records, or a user's "Not me" to a
    /// remote approval.
    static func needsAttention(_ event: AuditEvent) -> Bool {
        (event.event == .offlineLogin && event.outcome != .accept) || event.event == .offlineGap
            || (event.event == .approvalDenied && event.reason == .code(.approvalMuted))
    }

    /// The filtered audit rows as CSV (RFC 4180), newest first, at most 10,000.
    func auditCSV(_ request: HTTPRequest) throws(StoreError) -> HTTPResponse {
        var (query, problem) = auditQuery(request)
        if let problem {
            return HTTPResponse(
                status: 400, body: Array((problem + "\n").utf8), contentType: "text/plain; charset=utf-8")
        }
        query.limit = 10_000
        let records = try store.consoleAudit(query)
        func cell(_ text: String?) -> String {
            var value = text ?? ""
            // A leading =, +, - or @ would be a formula in a spreadsheet.
            if let first = value.first, "=+-@".contains(first) { value = "'" + value }
            return "\"" + value.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"")
                + "\""
        }
        var lines = ["id,time,event,outcome,user,claimed_user,host,service,client_service,kid,reason,peer,count,admin"]
        for record in records {
            let e = record.event
            lines.append(
                [
                    String(record.id), ConsoleHTML.time(record.time), cell(e.event.name), cell(e.outcome.name),
                    cell(e.user),
                    cell(e.claimedUser), cell(e.host), cell(e.service), cell(e.clientService), cell(e.kid),
                    cell(e.reason?.text), cell(e.peer), String(e.count),
                    cell(e.admin),
                ].joined(separator: ","))
        }
        return HTTPResponse(
            status: 200, body: Array((lines.joined(separator: "\r\n") + "\r\n").utf8),
            contentType: "text/csv; charset=utf-8",
            headers: [("Content-Disposition", "attachment; filename=\"fingerauth-audit.csv\"")])
    }

    package static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    // MARK: Keys

    /// Rows on one page of the keys and the hosts pages.
    static let pageSize = 50

    /// The 1-based page a request asks for (`?page=N`); 1 when absent or not a number.
    static func pageNumber(_ request: HTTPRequest?) -> Int {
        guard let request, let text = ConsoleForms.query(request, "page"), text.utf8.count <= 6,
            let number = Int(text), number >= 1
        else { return 1 }
        return number
    }

    /// Links to the previous and next page of `path`, when there are such pages.
    package static func pager(_ path: String, page: Int, more: Bool) -> String {
        var links: [String] = []
        if page > 1 { links.append("<a id=\"previous\" href=\"\(path)?page=\(page - 1)\">Previous</a>") }
        links.append("<span id=\"page\">page \(page)</span>")
        if more { links.append("<a id=\"next\" href=\"\(path)?page=\(page + 1)\">Next</a>") }
        return "<p class=\"pager\">" + links.joined(separator: " ") + "</p>"
    }

    /// An EK name for a table cell: its first 16 hex digits, the whole name as the title.
    package static func ekCell(_ ek: String?) -> String {
        guard let ek else { return "" }
        let clean = ConsoleHTML.escape(ek)
        return "<code class=\"ek\" title=\"\(clean)\">\(ConsoleHTML.escape(EndorsementKeyID.short(ek)))</code>"
    }

    /// One page of keys (pending first, then newest first), each with its last login — one
    /// index seek per key shown, whatever the size of the audit log.
    func keysPage(_ who: SignedIn, message: String?, page: Int = 1) throws(StoreError) -> String {
        let fetched = try store.keysPage(Paging(offset: (page - 1) * Self.pageSize, limit: Self.pageSize + 1))
        let keys = Array(fetched.prefix(Self.pageSize))
        let lastLogins = try store.lastLogins(of: keys)
        let rows = keys.map { key -> [String] in
            var actions: [String] = []
            if key.status == .pending {
                actions.append(
                    ConsoleHTML.button(
                        "Approve", action: "/keys/approve", fields: [("kid", key.kid)], csrf: who.csrf, cls: "approve"))
            }
            if key.status != .revoked {
                actions.append(
                    ConsoleHTML.button(
                        "Revoke", action: "/keys/revoke", fields: [("kid", key.kid)], csrf: who.csrf, cls: "danger"))
            }
            return [
                "<code>\(ConsoleHTML.escape(key.kid))</code>", Self.approvalsLink("user", key.user),
                ConsoleHTML.escape(key.host),
                key.kind.rawValue, "<span class=\"status\">\(key.status.rawValue)</span>",
                ConsoleHTML.time(key.created),
                lastLogins[key.kid].map(ConsoleHTML.time) ?? "never", Self.ekCell(key.ek),
                actions.joined(separator: " "),
            ]
        }
        let note = ConsoleHTML.message(message)
        let body =
            note + "<p>EK: the TPM endorsement key that attested the key (SHA-256 of its public key).</p>"
            + ConsoleHTML.table(
                id: "keys",
                headers: [
                    "kid", "user", "host", "kind", "status", "registered (UTC)",
                    "last login (UTC)", "EK", "",
                ], rows: rows)
            + Self.pager("/keys", page: page, more: fetched.count > Self.pageSize)
        return ConsoleHTML.page(title: "Keys", admin: who.admin, csrf: who.csrf, current: "/keys", body: body)
    }

    /// Approves or revokes `kid`, audited as `admin_approve` / `admin_revoke` with the admin's name.
    func keyAction(_ approve: Bool, kid: String, _ who: SignedIn) -> HTTPResponse {
        let clean = LogText.clean(kid)
        do {
            let key = try store.registeredKey(kid: kid)
            var event = AuditEvent(
                event: approve ? .adminApprove : .adminRevoke, user: key?.user, host: key?.host,
                kid: clean, outcome: .accept, peer: LogText.clean(who.address), admin: who.admin)
            let message: String
            if approve {
                switch try store.approve(kid: kid) {
                case .approved: message = "Approved \(kid)."
                case .alreadyActive:
                    event.reason = .code(.alreadyActive)
                    message = "\(kid) was already active."
                case .revoked, .unknown:
                    event.outcome = .deny
                    event.reason = .token(key == nil ? .unknownKid : .keyRevoked)
                    message = key == nil ? "No key \(kid)." : "\(kid) is revoked and stays revoked."
                }
            } else {
                switch try store.revoke(kid: kid, now: who.now) {
                case .revoked: message = "Revoked \(kid)."
                case .alreadyRevoked:
                    event.reason = .code(.alreadyRevoked)
                    message = "\(kid) was already revoked."
                case .unknown:
                    event.outcome = .deny
                    event.reason = .token(.unknownKid)
                    message = "No key \(kid)."
                }
            }
            try store.audit(event, now: who.now)
            log.message("console: \(who.admin) \(approve ? "approve" : "revoke") \(clean): \(event.outcome)")
            return html(event.outcome == .accept ? 200 : 404, try keysPage(who, message: message))
        } catch {
            log.message("console: key action: \(error)")
            return unavailable(who, writing: true)
        }
    }
}

/// Logins per hour as an SVG bar chart rendered on the server (no script): accepted bars
/// green, refusals red above them, one column per hour of the last 168.
package enum ConsoleChart {
    package static func svg(hours: [(hour: Int64, accepted: Int64, refused: Int64)], from start: Int64) -> String {
        let width = 5
        let height = 160
        let columns = 168
        let peak = max(1, hours.map { $0.accepted + $0.refused }.max() ?? 1)
        var bars: [String] = []
        for entry in hours {
            let column = Int((entry.hour - start) / 3600)
            guard column >= 0, column < columns else { continue }
            let x = column * width
            let acceptedHeight = Int(Double(height) * Double(entry.accepted) / Double(peak))
            let refusedHeight = Int(Double(height) * Double(entry.refused) / Double(peak))
            let label = "\(ConsoleHTML.time(entry.hour)): \(entry.accepted) accepted, \(entry.refused) refused"
            if entry.accepted > 0 {
                bars.append(
                    "<rect class=\"accepted\" x=\"\(x)\" y=\"\(height - acceptedHeight)\" width=\"\(width - 1)\" height=\"\(max(acceptedHeight, 1))\"><title>\(label)</title></rect>"
                )
            }
            if entry.refused > 0 {
                bars.append(
                    "<rect class=\"refused\" x=\"\(x)\" y=\"\(height - acceptedHeight - refusedHeight)\" width=\"\(width - 1)\" height=\"\(max(refusedHeight, 1))\"><title>\(label)</title></rect>"
                )
            }
        }
        return
            "<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(columns * width)\" height=\"\(height)\" "
            + "viewBox=\"0 0 \(columns * width) \(height)\" role=\"img\" aria-label=\"logins per hour\">"
            + bars.joined() + "</svg>"
    }
}

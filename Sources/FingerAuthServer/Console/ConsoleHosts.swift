import FingerAuthCore
import FingerAuthStore

/// The hosts page and its one action, revoking a host: its enrollment tokens, every key
/// registered on it, and the access tokens issued to those keys, as `fingerauthd token
/// revoke --host` does, audited with the admin's name.
extension AdminConsole {
    /// A host whose keys have not logged in for this long is marked on the page.
    static let staleSeconds: Int64 = 30 * 86_400

    func hostsPage(_ who: SignedIn, message: String? = nil) throws(StoreError) -> String {
        let hosts = try store.hostSummaries()
        let lastLogins = try store.lastLogins()
        var lastSeen: [String: Int64] = [:]
        for key in try store.listKeys() {
            if let time = lastLogins[key.kid] { lastSeen[key.host] = max(lastSeen[key.host] ?? time, time) }
        }
        let rows = hosts.map { host -> [String] in
            let seen = lastSeen[host.host]
            var seenText = seen.map(ConsoleHTML.time) ?? "never"
            if seen.map({ who.now - $0 > Self.staleSeconds }) ?? false { seenText += " <em class=\"stale\">(over \(Self.staleSeconds / 86_400) days)</em>" }
            let revoke = host.activeTokens > 0 || host.keys > 0
                ? ConsoleHTML.button("Revoke host", action: "/hosts/revoke", fields: [("host", host.host)], csrf: who.csrf, cls: "danger")
                : ""
            return [ConsoleHTML.escape(host.host), ConsoleHTML.escape(host.labels.joined(separator: ", ")),
                    "\(host.activeTokens) of \(host.tokens)", String(host.keys), seenText, revoke]
        }
        let note = ConsoleHTML.message(message)
        let body = note + "<p>Last login: the newest accepted fingerprint login by any key of the host.</p>"
            + ConsoleHTML.table(id: "hosts", headers: ["host", "labels", "enrollment tokens active", "keys", "last login (UTC)", ""],
                                rows: rows)
        return ConsoleHTML.page(title: "Hosts", admin: who.admin, csrf: who.csrf, current: "/hosts", body: body)
    }

    /// Revokes `host`'s enrollment tokens and keys; 404 when nothing of it was active.
    func hostRevoke(host: String, _ who: SignedIn) -> HTTPResponse {
        let clean = LogText.clean(host)
        do {
            let revocation = try store.revokeHostTokens(id: nil, host: host, now: who.now)
            let peer = LogText.clean(who.address)
            guard !revocation.hosts.isEmpty || !revocation.keys.isEmpty else {
                try store.audit(AuditEvent(event: "token_revoke", host: clean, outcome: "deny", reason: "unknown_token",
                                           peer: peer, admin: who.admin), now: who.now)
                return html(404, try hostsPage(who, message: "Nothing of \(host) was active."))
            }
            for event in revocation.auditEvents(peer: peer, admin: who.admin) { try store.audit(event, now: who.now) }
            log.message("console: \(who.admin) revoked host \(clean): \(revocation.hosts.count) token(s), "
                        + "\(revocation.keys.count) key(s), \(revocation.accessTokens) access token(s)")
            let keys = revocation.keys.count
            return html(200, try hostsPage(who, message: "Revoked \(host): its enrollment tokens, \(keys) key\(keys == 1 ? "" : "s")"
                                           + " and \(revocation.accessTokens) access token\(revocation.accessTokens == 1 ? "" : "s")."))
        } catch {
            log.message("console: host revoke: \(error)")
            return unavailable(who, writing: true)
        }
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthWeb

/// The hosts page and its one action, revoking a host: its enrollment tokens, every key
/// registered on it, and the access tokens issued to those keys, as `fingerauthd token
/// revoke --host` does, audited with the admin's name.
extension AdminConsole {
    /// A host whose keys have not logged in for this long is marked on the page.
    static let staleSeconds: Int64 = 30 * 86_400

    func hostsPage(_ who: SignedIn, message: String? = nil, page: Int = 1) throws(StoreError) -> String {
        let fetched = try store.hostSummaries(
            page: Paging(offset: (page - 1) * Self.pageSize, limit: Self.pageSize + 1))
        let hosts = Array(fetched.prefix(Self.pageSize))
        let lastSeen = try store.lastLogins(hosts: hosts.map(\.host))
        let stages = try store.loginStages(
            hosts: hosts.map(\.host), since: who.now - LoginStageSummary.seconds,
            limit: LoginStageSummary.logins)
        var grants: [String: [IssuedGrant]] = [:]
        for host in hosts { grants[host.host] = try store.liveGrants(host: host.host, now: who.now) }
        let rows = hosts.map { host -> [String] in
            let seen = lastSeen[host.host]
            var seenText = seen.map(ConsoleHTML.time) ?? "never"
            if seen.map({ who.now - $0 > Self.staleSeconds }) ?? false {
                seenText += " <em class=\"stale\">(over \(Self.staleSeconds / 86_400) days)</em>"
            }
            let revoke =
                host.activeTokens > 0 || host.keys > 0
                ? ConsoleHTML.button(
                    "Revoke host", action: "/hosts/revoke", fields: [("host", host.host)], csrf: who.csrf, cls: "danger"
                )
                : ""
            var ek = "none: the first attestation pins it"
            if let pin = host.ek {
                ek =
                    Self.ekCell(pin.ek)
                    + (pin.source == .admin
                        ? " <span class=\"ek-source\">provisioned by \(ConsoleHTML.escape(pin.by ?? "an admin"))</span>"
                        : " <span class=\"ek-source\">TOFU (pinned by its first attestation)</span>")
            }
            return [
                Self.approvalsLink("host", host.host), ConsoleHTML.escape(host.labels.joined(separator: ", ")),
                "\(host.activeTokens) of \(host.tokens)", String(host.keys), seenText,
                Self.stageCell(stages[host.host].map(LoginStageSummary.init)), ek,
                Self.grantCell(grants[host.host] ?? [], host: host.host, who), revoke,
            ]
        }
        let note = ConsoleHTML.message(message)
        let body =
            note + "<p>Last login: the newest accepted fingerprint login by any key of the host. "
            + "EK: the TPM endorsement key the host's attested keys must come from; a TOFU pin is whichever TPM "
            + "attested first, an admin's (fingerauthd hosts add-ek) is the host's own.</p>"
            + "<p>Login times: p50 / p95 in ms over the host's last \(LoginStageSummary.logins) accepted logins of the "
            + "last \(LoginStageSummary.seconds / 86_400) days, as its login helpers reported them (the host's word, "
            + "not verified): <em>ready</em> from the helper's start to the reader armed and the authenticator "
            + "reached, <em>finger</em> from then to the match (the person's own time included), <em>connect</em> "
            + "the connection to the authenticator opened and answered.</p>"
            + "<p>Offline grants: the live ones (unexpired, their key active, not replaced or withdrawn), each good "
            + "for its user's fingerprint logins on that host while it cannot reach the authenticator, until its end "
            + "or its uses run out; a withdrawn grant leaves the host at its next contact.</p>"
            + ConsoleHTML.table(
                id: "hosts",
                headers: [
                    "host", "labels", "enrollment tokens active", "keys", "last login (UTC)",
                    "login times (ms)", "EK", "offline grants", "",
                ], rows: rows)
            + Self.pager("/hosts", page: page, more: fetched.count > Self.pageSize)
        return ConsoleHTML.page(title: "Hosts", admin: who.admin, csrf: who.csrf, current: "/hosts", body: body)
    }

    /// `ready 9 / 14<br>finger 640 / 1200<br>connect 3 / 5<br>42 logins`: each stage's p50 / p95.
    static func stageCell(_ summary: LoginStageSummary?) -> String {
        guard let summary else { return "none reported" }
        var lines: [String] = []
        for (name, stage) in [("ready", summary.ready), ("finger", summary.match), ("connect", summary.connect)] {
            guard let stage else { continue }
            lines.append("<span class=\"stage\">\(name) \(stage.p50) / \(stage.p95)</span>")
        }
        let count = [summary.ready, summary.match, summary.connect].compactMap { $0?.count }.max() ?? 0
        lines.append("\(count) login\(count == 1 ? "" : "s")")
        return lines.joined(separator: "<br>")
    }

    /// `alice until 2026-12-06 14:00 UTC, 20 uses` per live grant, and the button that
    /// withdraws them; `none`.
    static func grantCell(_ grants: [IssuedGrant], host: String, _ who: SignedIn) -> String {
        guard !grants.isEmpty else { return "none" }
        let lines = grants.map { grant in
            "<span class=\"grant\">\(ConsoleHTML.escape(grant.user)) until \(ConsoleHTML.escape(UTCTime.minutes(grant.notAfter))), "
                + "\(grant.uses) use\(grant.uses == 1 ? "" : "s")</span>"
        }
        return lines.joined(separator: "<br>")
            + ConsoleHTML.button(
                "Withdraw grants", action: "/hosts/withdraw-grants", fields: [("host", host)], csrf: who.csrf,
                cls: "danger")
    }

    /// Withdraws `host`'s live offline grants (as `fingerauthd grants withdraw --host`), audited
    /// with the admin's name.
    func grantWithdraw(host: String, _ who: SignedIn) -> HTTPResponse {
        do {
            let count = try store.withdrawGrants(
                host: host, user: nil, admin: who.admin, peer: LogText.clean(who.address), now: who.now)
            log.message("console: \(who.admin) withdrew \(count) offline grant(s) of \(LogText.clean(host))")
            return html(
                200,
                try hostsPage(
                    who, message: "Withdrew \(count) offline grant\(count == 1 ? "" : "s") of \(host)."))
        } catch {
            log.message("console: grant withdraw: \(error)")
            return unavailable(who, writing: true)
        }
    }

    /// Revokes `host`'s enrollment tokens and keys; 404 when nothing of it was active.
    func hostRevoke(host: String, _ who: SignedIn) -> HTTPResponse {
        let clean = LogText.clean(host)
        do {
            let revocation = try store.revokeHostTokens(id: nil, host: host, now: who.now)
            let peer = LogText.clean(who.address)
            guard !revocation.hosts.isEmpty || !revocation.keys.isEmpty || !revocation.hostKeys.isEmpty else {
                try store.audit(
                    AuditEvent(
                        event: .tokenRevoke, host: clean, outcome: .deny, reason: .code(.unknownToken),
                        peer: peer, admin: who.admin), now: who.now)
                return html(404, try hostsPage(who, message: "Nothing of \(host) was active."))
            }
            for event in revocation.auditEvents(peer: peer, admin: who.admin) { try store.audit(event, now: who.now) }
            log.message(
                "console: \(who.admin) revoked host \(clean): \(revocation.hosts.count) token(s), "
                    + "\(revocation.keys.count) key(s), \(revocation.accessTokens) access token(s)")
            let keys = revocation.keys.count
            return html(
                200,
                try hostsPage(
                    who,
                    message: "Revoked \(host): its enrollment tokens, \(keys) key\(keys == 1 ? "" : "s")"
                        + " and \(revocation.accessTokens) access token\(revocation.accessTokens == 1 ? "" : "s")."))
        } catch {
            log.message("console: host revoke: \(error)")
            return unavailable(who, writing: true)
        }
    }
}

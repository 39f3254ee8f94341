import Synchronization

/// The counters behind `GET /metrics`, rendered in the Prometheus text format 0.0.4.
/// Label values come from fixed sets (the transport's route and answer labels, outcomes,
/// refusal codes), never from a request, so a client cannot grow the series or put text
/// into them.
package final class Metrics: Sendable {
    /// Upper bounds of the request latency histogram, seconds.
    package static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    private struct Counters {
        var logins: [String: Int64] = [:]
        var keyEvents: [String: Int64] = [:]
        var requests: [String: Int64] = [:]
        var bucketCounts = [Int64](repeating: 0, count: Metrics.buckets.count)
        var latencySum = 0.0
        var latencyCount: Int64 = 0
        var replays: Int64 = 0
        var rateLimited: [String: Int64] = [:]
        var unverifiedTokens: Int64 = 0
        var connectionsRefused: Int64 = 0
        var connectionsCapped: Int64 = 0
        var handshakesFull: Int64 = 0
        var handshakesResumed: Int64 = 0
        var approvalNotices: Int64 = 0
    }

    private let counters = Mutex(Counters())

    package init() {}

    /// Counts one finished request: its labels (the transport's: `route="…",status="…"`,
    /// from fixed sets) and its handling time.
    package func request(labels key: String, seconds: Double) {
        counters.withLock { c in
            c.requests[key, default: 0] += 1
            c.latencySum += seconds
            c.latencyCount += 1
            for (i, bound) in Self.buckets.enumerated() where seconds <= bound { c.bucketCounts[i] += 1 }
        }
    }

    /// Counts an audited event: logins (and OAuth grants) by endpoint, outcome and reason;
    /// key registrations and revocations by event, outcome and reason.
    func audited(_ event: AuditEvent, route: String) {
        let reason = event.reason.map { Self.labelSafe($0.text) } ?? "none"
        counters.withLock { c in
            switch event.event {
            case .login, .oauthToken:
                c.logins[
                    "endpoint=\"\(route)\",outcome=\"\(event.outcome.name)\",reason=\"\(reason)\"",
                    default: 0] += 1
                if event.reason == .token(.replayed) { c.replays += 1 }
            default:
                c.keyEvents[
                    "event=\"\(Self.labelSafe(event.event.name))\",outcome=\"\(event.outcome.name)\",reason=\"\(reason)\"",
                    default: 0] += 1
            }
        }
    }

    /// Counts a request refused past the `scope` (`user`, `address`, `host`, `offline`) limit.
    func rateLimited(scope: String) {
        counters.withLock { c in c.rateLimited["scope=\"\(scope)\"", default: 0] += 1 }
    }

    /// Counts a connection closed at its accept: its address was past `connection-rate`.
    package func connectionRefused() {
        counters.withLock { c in c.connectionsRefused += 1 }
    }

    /// Counts a connection closed at once: its address held `max-connections-per-address`.
    package func connectionCapped() {
        counters.withLock { c in c.connectionsCapped += 1 }
    }

    /// Counts a TLS connection's handshake at its first request: a full one (certificate
    /// signed) or a session resumed with a ticket.
    package func tlsHandshake(resumed: Bool) {
        counters.withLock { c in
            if resumed { c.handshakesResumed += 1 } else { c.handshakesFull += 1 }
        }
    }

    /// Counts a notice of a changed approval received from PostgreSQL (`ApprovalNotice`).
    package func approvalNotice() {
        counters.withLock { c in c.approvalNotices += 1 }
    }

    /// Counts a token refused before its signature verified.
    func unverified() {
        counters.withLock { c in c.unverifiedTokens += 1 }
    }

    /// The exposition text; `keys` are the registry's counts by status (nil when the
    /// database could not be read, then the gauge is left out); `refusalsCounted` the
    /// refusals of addresses past their limit, counted together; `commits` the group
    /// commit's batches, items and failed batches.
    package func render(
        keys: [(KeyStatus, Int64)]?, refusalsCounted: Int64 = 0,
        commits: (batches: Int64, items: Int64, failed: Int64) = (0, 0, 0)
    ) -> String {
        counters.withLock { c in
            var out = ""
            func family(_ name: String, _ type: String, _ help: String) {
                out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            }
            func series(_ name: String, _ values: [String: Int64]) {
                for key in values.keys.sorted() { out += "\(name){\(key)} \(values[key] ?? 0)\n" }
            }
            family(
                "fingerauthd_logins_total", "counter",
                "Login attempts (/v1/login, /login, /oauth2/token) by outcome and reason.")
            series("fingerauthd_logins_total", c.logins)
            family(
                "fingerauthd_key_events_total", "counter", "Key registrations and revocations by outcome and reason.")
            series("fingerauthd_key_events_total", c.keyEvents)
            family("fingerauthd_replays_refused_total", "counter", "Tokens refused because their jti was already used.")
            out += "fingerauthd_replays_refused_total \(c.replays)\n"
            family("fingerauthd_rate_limited_total", "counter", "Requests answered 429, by the limit that applied.")
            var limited = c.rateLimited
            for scope in ["user", "address"] where limited["scope=\"\(scope)\""] == nil {
                limited["scope=\"\(scope)\""] = 0
            }
            series("fingerauthd_rate_limited_total", limited)
            family(
                "fingerauthd_unverified_tokens_total", "counter",
                "Tokens refused before their signature verified with a registered key (answered invalid_token).")
            out += "fingerauthd_unverified_tokens_total \(c.unverifiedTokens)\n"
            family(
                "fingerauthd_refusals_counted_total", "counter",
                "Requests of addresses past their failure limit, answered 429 and counted together in refusals audit rows."
            )
            out += "fingerauthd_refusals_counted_total \(refusalsCounted)\n"
            family("fingerauthd_commit_batches_total", "counter", "Durable commits of the request path (group commit).")
            out += "fingerauthd_commit_batches_total \(commits.batches)\n"
            family(
                "fingerauthd_commit_items_total", "counter", "Writes (audit rows, jti claims, counts) in those commits."
            )
            out += "fingerauthd_commit_items_total \(commits.items)\n"
            family(
                "fingerauthd_commit_failures_total", "counter",
                "Batches that could not be committed (every request in them answered 503).")
            out += "fingerauthd_commit_failures_total \(commits.failed)\n"
            family(
                "fingerauthd_connections_refused_total", "counter",
                "New connections closed at their accept, before TLS, by the limit that applied.")
            out += "fingerauthd_connections_refused_total{limit=\"connection_rate\"} \(c.connectionsRefused)\n"
            out += "fingerauthd_connections_refused_total{limit=\"connections_per_address\"} \(c.connectionsCapped)\n"
            family(
                "fingerauthd_tls_handshakes_total", "counter",
                "TLS connections that carried a request, by handshake: full (certificate signed) or resumed (session ticket)."
            )
            out += "fingerauthd_tls_handshakes_total{kind=\"full\"} \(c.handshakesFull)\n"
            out += "fingerauthd_tls_handshakes_total{kind=\"resumed\"} \(c.handshakesResumed)\n"
            family(
                "fingerauthd_approval_notifications_total", "counter",
                "Notices of changed approvals received on PostgreSQL's fingerauth_approvals channel (a fleet's wake-ups)."
            )
            out += "fingerauthd_approval_notifications_total \(c.approvalNotices)\n"
            family("fingerauthd_requests_total", "counter", "HTTP requests by route and status.")
            series("fingerauthd_requests_total", c.requests)
            family("fingerauthd_request_duration_seconds", "histogram", "Time from complete request to answer.")
            for (i, bound) in Self.buckets.enumerated() {
                out += "fingerauthd_request_duration_seconds_bucket{le=\"\(bound)\"} \(c.bucketCounts[i])\n"
            }
            out += "fingerauthd_request_duration_seconds_bucket{le=\"+Inf\"} \(c.latencyCount)\n"
            out += "fingerauthd_request_duration_seconds_sum \(c.latencySum)\n"
            out += "fingerauthd_request_duration_seconds_count \(c.latencyCount)\n"
            if let keys {
                family("fingerauthd_keys", "gauge", "Registered device keys by status.")
                for (status, count) in keys { out += "fingerauthd_keys{status=\"\(status.rawValue)\"} \(count)\n" }
            }
            return out
        }
    }

    /// Reason codes are fixed ASCII words; anything else becomes `other`.
    static func labelSafe(_ text: String) -> String {
        let ok =
            !text.isEmpty && text.utf8.count <= 40
            && text.utf8.allSatisfy {
                ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f
            }
        return ok ? text : "other"
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthSystem

/// The checks of `fingerauth status` that ask the authenticator. Nothing here signs a
/// token or logs in: status must not write login rows into the audit log.
enum RemoteChecks {
    /// Clock difference that starts to matter (warn) and that breaks logins (fail), seconds.
    /// fingerauthd tolerates 30 s on `iat`/`nbf`/`exp` by default.
    static let skewWarn: Int64 = 5
    static let skewFail: Int64 = 30

    /// `GET /healthz` over the configured TLS; returns the check, whether it was reached,
    /// and the clock check made from the answer's `Date` header.
    static func authenticator(_ options: Options) -> (StatusCheck, reachable: Bool, clock: StatusCheck) {
        let authenticator = Authenticator(options: options)
        let url = authenticator.healthURL
        let sent = SystemClock().now()
        switch authenticator.send("GET", url) {
        case let .failure(failure):
            let fix: String
            switch failure.kind {
            case .tls:
                fix =
                    "set cafile = the CA that signed the authenticator's certificate (and check pinned_pubkey, the host name in url)"
            case .refused:
                fix = "start the authenticator or correct url in the configuration; check the network and firewall"
            case .timeout: fix = "the authenticator does not answer in time; check it and the network"
            default: fix = "check url, cafile and the authenticator"
            }
            return (
                .fail("authenticator", "\(url): \(failure.message)", fix: fix), false,
                .skip("clock", "no answer from the authenticator to compare clocks with")
            )
        case let .success(response):
            let received = SystemClock().now()
            let tls = url.hasPrefix("https://") ? "TLS certificate valid" : "plain http (loopback, allow_http)"
            let check: StatusCheck =
                response.status == 200
                ? .pass("authenticator", "\(url) answered 200; \(tls)")
                : .fail(
                    "authenticator", "\(url) answered \(response.status)",
                    fix: "the authenticator is not healthy; look at its log")
            return (check, true, clock(response.date, sent: sent, received: received))
        }
    }

    static func clock(_ header: String?, sent: Int64, received: Int64) -> StatusCheck {
        let date = header.map { Authenticator.printable($0.filter { !$0.isNewline }) }
        guard let date, let server = HTTPDate.parse(date) else {
            let seen = date.map { " (Date: \($0))" } ?? ""
            return .warn(
                "clock", "the authenticator sent no usable Date header\(seen); skew unknown",
                fix: "keep the clock synchronised (timedatectl set-ntp true)")
        }
        // The server stamped its Date between `sent` and `received`, to the second.
        let skew: Int64 = server < sent ? sent - server : (server > received ? received - server : 0)
        let text = "skew \(skew >= 0 ? "+" : "")\(skew) s against the authenticator's Date (\(date))"
        let magnitude = skew < 0 ? -skew : skew
        if magnitude > skewFail {
            return .fail(
                "clock", text + "; tokens will be refused",
                fix: "synchronise the clock: timedatectl set-ntp true (or chronyc makestep)")
        }
        if magnitude > skewWarn {
            return .warn("clock", text, fix: "synchronise the clock: timedatectl set-ntp true")
        }
        return .pass("clock", text)
    }

    /// The key's registration: the local record (kid, status), then the authenticator's view
    /// through `GET /v1/keys/<kid>` with the host token (an authenticator without that
    /// endpoint leaves the local record as all there is: a warning).
    static func registered(_ context: Context, key: DeviceKey?, reachable: Bool) -> StatusCheck {
        let path = context.paths.registration
        let user = context.user
        guard let key else { return .skip("registered", "no usable device key") }
        let record: Registration?
        do {
            record = try Registration.load(path)
        } catch {
            return .fail("registered", "\(error)", fix: "chown root:root \(path) && chmod 600 \(path)")
        }
        guard let record else {
            return .fail(
                "registered", "key \(key.kid) was never registered from this host (no \(path))",
                fix: "fingerauth register --user \(user)")
        }
        guard record.kid == key.kid else {
            return .fail(
                "registered", "\(path) names key \(record.kid), but the device key is \(key.kid)",
                fix: "fingerauth register --user \(user)")
        }
        guard record.status != "revoked" else {
            return .fail(
                "registered", "key \(key.kid) was revoked (recorded in \(path))",
                fix: "fingerauth key rotate --user \(user)")
        }
        if record.status == "pending" {
            return .warn(
                "registered",
                "key \(key.kid) was pending approval when registered (\(path)); logins are refused until an admin approves it",
                fix: "on the authenticator: fingerauthd keys approve --kid \(key.kid)")
        }
        let local = "registered locally (\(path): kid \(key.kid), status \(record.status))"
        guard reachable else { return .warn("registered", local + "; the authenticator cannot be asked now") }
        let authenticator = Authenticator(options: context.options)
        guard let token = try? authenticator.hostToken() else {
            return .warn(
                "registered",
                local + "; cannot ask the authenticator without the host token (\(context.options.tokenFile))",
                fix: "install this host's enrollment token at \(context.options.tokenFile) (root 0600)")
        }
        let url = authenticator.keysURL + "/" + key.kid
        switch authenticator.send("GET", url, token: token) {
        case .failure:
            return .warn("registered", local + "; the authenticator did not answer about the key")
        case let .success(response):
            let json = try? JSONParser().parse(response.body)
            switch (response.status, json?["error"]?.stringValue) {
            case (200, _):
                let status = json?["status"]?.stringValue ?? "unknown"
                if status == "active" { return .pass("registered", "key \(key.kid) is active at the authenticator") }
                return .fail(
                    "registered", "key \(key.kid) is \(Authenticator.printable(status)) at the authenticator",
                    fix: "fingerauth key rotate --user \(user)")
            case (404, "unknown_kid"):
                return .fail(
                    "registered", "the authenticator does not know key \(key.kid)",
                    fix: "fingerauth register --user \(user)")
            case (403, _):
                return .fail(
                    "registered", "key \(key.kid) is registered to another host at the authenticator",
                    fix: "fingerauth key rotate --user \(user)")
            default:
                return .warn(
                    "registered",
                    local + "; not confirmed: the authenticator has no key-status endpoint "
                        + "(GET /v1/keys/<kid> answered \(response.status)), so a revocation made there is not visible here"
                )
            }
        }
    }
}

extension RemoteChecks {
    /// What the authenticator's policy says about the user's finger at each PAM service that
    /// uses the module here (`POST /v1/policy/check` with the host token): a warning that
    /// names the rule for every service the policy refuses. Asks, never logs in.
    static func policy(_ context: Context, services: [String], reachable: Bool) -> StatusCheck {
        guard reachable else { return .skip("policy", "the authenticator cannot be asked now") }
        guard !services.isEmpty else { return .skip("policy", "no PAM service uses the module") }
        let authenticator = Authenticator(options: context.options)
        guard let token = try? authenticator.hostToken() else {
            return .skip("policy", "no host token to ask the authenticator with")
        }
        var refused: [String] = []
        for service in services {
            switch authenticator.checkPolicy(user: context.user, service: service, token: token) {
            case .allowed: continue
            case let .denied(rule): refused.append(service + (rule.map { " (rule \($0))" } ?? ""))
            case .unknown(status: nil): return .warn("policy", "the authenticator did not answer about its policy")
            case let .unknown(status?):
                return .skip(
                    "policy", "the authenticator has no policy check (POST /v1/policy/check answered \(status))")
            }
        }
        guard refused.isEmpty else {
            return .warn(
                "policy",
                "the authenticator's policy refuses \(context.user)'s finger at: \(refused.joined(separator: ", "))",
                fix: "those services ask for the password; to change it, on the authenticator: fingerauthd policy list")
        }
        return .pass(
            "policy",
            "the authenticator's policy allows \(context.user)'s finger at \(services.joined(separator: ", "))")
    }
}

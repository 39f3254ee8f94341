import FingerAuthCore
import FingerAuthLoginDomain

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth status`: a checklist of everything a fingerprint login needs, each line
/// passed or failed with its fix. Exit status 1 when a failed line blocks the login.
enum StatusCommand {
    static let usage = """
        usage: fingerauth status [--user U] [--json] [--pam-dir D] [--config F] [--state-dir D]
          Checks, in order: config (readable, safe, url set), login-helper, backend (libfprint or
          fprintd, and why: reader = …), reader (driver, name; opened and closed again, or
          fprintd's), fprintd (running, holding the reader), lid (open, closed: lid = skip),
          enrolled (fingers, FingerAuth's or fprintd's),
          key (present, root 0600, kid), registered (local record; the authenticator's view when
          it offers GET /v1/keys/<kid>), authenticator (GET /healthz, TLS), clock (skew against
          the authenticator's Date), pam (services in --pam-dir, default /etc/pam.d, using the module),
          sessions (logind or records mode of the local-seat rule, and what it cannot see).
          Each line is ok, warn, FAIL (with the fix) or skip. --json prints
          {"user","ready","checks":[{"name","status","detail","fix"}]}. Run as a user (not
          root), it checks what that user's screen locker needs: the configuration and
          fingerauth-agent answering on agent_socket (present, answering, its version).
          As root without --user it checks the user who ran sudo ($SUDO_USER), else asks which user
          (exit status 2). On a host without systemd the agent's line is skipped, not failed.
          Exit status: 0 nothing blocks fingerprint login (warnings allowed), 1 something does,
          2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions.union(["pam-dir"]), switches: ["json"])
        let pamDirectory = args["pam-dir"] ?? PamServices.defaultDirectory
        if geteuid() != 0 { return try AgentStatus.run(args) }
        let chosen = try StatusUser.choose(args)
        var checks: [StatusCheck] = []
        let user: String
        do {
            _ = try Context.loadOptions(args, requireURL: false)
            let context = try Context(args, requireURL: false)
            user = context.user
            checks = runChecks(context, pamDirectory: pamDirectory)
        } catch {
            // Only a configuration that cannot be read gets here with a valid user: the
            // checklist says so; a wrong --user is an ordinary error.
            guard (try? Context.loadOptions(args, requireURL: false)) == nil, let fallback = Context.defaultUser(args)
            else {
                throw error
            }
            user = fallback
            checks = [.fail("config", error.message, fix: configFix(args["config"] ?? Options.defaultConfigPath))]
            for name in [
                "pam-helper", "login-helper", "backend", "reader", "fprintd", "lid", "enrolled", "key", "registered",
                "authenticator",
                "clock", "policy",
            ] {
                checks.append(.skip(name, "the configuration could not be read"))
            }
            checks.append(LocalChecks.pam(directory: pamDirectory))
            checks.append(.skip("sessions", "the configuration could not be read"))
            checks.append(.skip("offline", "the configuration could not be read"))
        }
        let blocking = checks.filter { $0.result == .fail }
        if args.has("json") {
            say(
                JSONEncoding.encode(
                    .object([
                        ("user", .string(user)), ("ready", .bool(blocking.isEmpty)),
                        ("checks", .array(checks.map(\.json))),
                    ])))
        } else {
            say("fingerauth status for \(user)" + (chosen.map { " (\($0))" } ?? ""))
            for check in checks { say(check.text) }
            say(
                blocking.isEmpty
                    ? "fingerprint login for \(user): ready"
                    : "fingerprint login for \(user): blocked by \(blocking.map(\.name).joined(separator: ", "))")
        }
        return blocking.isEmpty ? 0 : 1
    }

    /// The fix of a configuration that cannot be read: until it is corrected the module
    /// turns fingerprint login off (PAM goes on to the password), which no terminal shows.
    static func configFix(_ path: String) -> String {
        "correct it in \(path) (every key: man 5 fingerauth.conf); until then the module turns fingerprint "
            + "login off and logins go on to the password"
    }

    static func runChecks(_ context: Context, pamDirectory: String) -> [StatusCheck] {
        let options = context.options
        var checks = [LocalChecks.config(context), LocalChecks.pamHelper(options), LocalChecks.loginHelper(options)]
        checks.append(contentsOf: ReaderChecks.run(context))
        let (keyCheck, key) = LocalChecks.key(context)
        checks.append(keyCheck)
        if options.url == nil {
            checks.append(.skip("registered", "no url configured"))
            checks.append(.skip("authenticator", "no url configured"))
            checks.append(.skip("clock", "no url configured"))
            checks.append(.skip("policy", "no url configured"))
        } else {
            let (health, reachable, clock) = RemoteChecks.authenticator(options)
            checks.append(RemoteChecks.registered(context, key: key, reachable: reachable))
            checks.append(health)
            checks.append(clock)
            let services = PamServices.using(directory: pamDirectory).map(\.service)
            checks.append(RemoteChecks.policy(context, services: services, reachable: reachable))
        }
        checks.append(LocalChecks.pam(directory: pamDirectory, prompt: options.prompt))
        checks.append(SeatCheck.sessions(options))
        checks.append(OfflineCheck.run(context, key: key))
        return checks
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth status` run as a user (not root): what a screen locker of this user needs —
/// a readable configuration and `fingerauth-agent` answering on its socket (present, a
/// socket, answering STATUS, speaking protocol 1). The root-only checks (enrollment, key,
/// reader) are the agent's to make; `sudo fingerauth status` shows them.
enum AgentStatus {
    static func run(_ args: CommandArguments) throws -> Int32 {
        var checks: [StatusCheck] = []
        let user = Context.defaultUser(args) ?? "you"
        var socketPath = Options.defaultAgentSocket
        do {
            let options = try Context.loadOptions(args, requireURL: true)
            socketPath = options.agentSocket
            checks.append(
                .pass(
                    "config",
                    "\(args["config"] ?? Options.defaultConfigPath) readable by \(user); url \(options.url?.text ?? "-")"
                ))
        } catch {
            let path = args["config"] ?? Options.defaultConfigPath
            let fix =
                error.message.contains("unknown key") || error.message.contains(": must ")
                ? StatusCommand.configFix(path) : "the configuration must be root-owned, mode 644, with url set"
            checks.append(.fail("config", error.message, fix: fix))
        }
        let agentCheck = agent(socketPath, systemd: LogindState().isRunning)
        checks.append(agentCheck)
        checks.append(.skip("enrollment", "root-only state; run sudo fingerauth status (it checks \(user))"))
        let blocking = checks.filter { $0.result == .fail }
        if args.has("json") {
            say(
                JSONEncoding.encode(
                    .object([
                        ("user", .string(user)), ("ready", .bool(blocking.isEmpty)),
                        ("checks", .array(checks.map(\.json))),
                    ])))
        } else {
            say("fingerauth status for \(user) (not root: the screen-locker path through fingerauth-agent)")
            for check in checks { say(check.text) }
            let ready =
                agentCheck.result == .skip
                ? "fingerprint unlock for \(user): no agent on this host (sudo and login do not need it)"
                : "fingerprint unlock for \(user): the agent answers"
            say(
                blocking.isEmpty
                    ? ready
                    : "fingerprint unlock for \(user): blocked by \(blocking.map(\.name).joined(separator: ", "))")
        }
        return blocking.isEmpty ? 0 : 1
    }

    /// Connects, asks STATUS, reads one line within 2 s. `systemd`: whether systemd runs
    /// this host (`/run/systemd/system`); without it nothing starts the agent's socket unit,
    /// so no agent is not a failure — a screen locker's fingerprint unlock is then simply
    /// not set up — and the fixes do not name systemctl.
    static func agent(_ path: String, systemd: Bool) -> StatusCheck {
        let fix =
            systemd
            ? "as root: systemctl enable --now fingerauth-agent.socket"
            : "start it as root from this host's init system: /usr/libexec/fingerauth/fingerauth-agent "
                + "(it listens on agent_socket; fingerauth-agent(8))"
        var st = stat()
        guard lstat(path, &st) == 0 else {
            guard systemd else {
                return .skip(
                    "agent",
                    "\(path) does not exist; no systemd on this host to start fingerauth-agent.socket, so screen "
                        + "lockers have no fingerprint unlock (to have it: \(fix))")
            }
            return .fail("agent", "\(path) does not exist: the agent is not running", fix: fix)
        }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { return .fail("agent", "\(path) is not a socket", fix: fix) }
        let channel: SocketLines
        switch SocketLines.connect(path) {
        case let .success(c): channel = c
        case let .failure(why): return .fail("agent", "\(path): connect: \(why.message)", fix: fix)
        }
        guard channel.send(AgentRequest.status.line, withinMilliseconds: 2000) else {
            return .fail("agent", "\(path): the request could not be sent", fix: fix)
        }
        switch channel.readLine(withinMilliseconds: 2000) {
        case let .line(text):
            if case let .status(software)? = AgentReply(line: text) {
                return .pass("agent", "\(path) answers: \(software), protocol \(AgentProtocol.version)")
            }
            return .fail(
                "agent", "\(path) answered something else: \(String(text.prefix(80)))",
                fix: "install the same version of fingerauth and fingerauth-agent; " + fix)
        case .timedOut:
            return .fail(
                "agent", "\(path): no answer within 2 s",
                fix: systemd ? "as root: systemctl restart fingerauth-agent.service" : "restart it as root; " + fix)
        case .closed, .garbage:
            return .fail("agent", "\(path): the connection closed without an answer", fix: fix)
        }
    }
}

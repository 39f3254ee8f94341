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
            checks.append(
                .fail("config", error.message, fix: "the configuration must be root-owned, mode 644, with url set"))
        }
        checks.append(agent(socketPath))
        checks.append(.skip("enrollment", "root-only state; run sudo fingerauth status --user \(user)"))
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
            say(
                blocking.isEmpty
                    ? "fingerprint unlock for \(user): the agent answers"
                    : "fingerprint unlock for \(user): blocked by \(blocking.map(\.name).joined(separator: ", "))")
        }
        return blocking.isEmpty ? 0 : 1
    }

    /// Connects, asks STATUS, reads one line within 2 s.
    static func agent(_ path: String) -> StatusCheck {
        let fix = "as root: systemctl enable --now fingerauth-agent.socket"
        var st = stat()
        guard lstat(path, &st) == 0 else {
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
                "agent", "\(path): no answer within 2 s", fix: "as root: systemctl restart fingerauth-agent.service")
        case .closed, .garbage:
            return .fail("agent", "\(path): the connection closed without an answer", fix: fix)
        }
    }
}

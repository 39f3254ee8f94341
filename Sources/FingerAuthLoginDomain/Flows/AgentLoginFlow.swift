import FingerAuthCore

/// A connection to `fingerauth-agent`, as the login decision sees it. The module plugs in
/// a Unix socket (`AgentSocket` in FingerAuthSystem); every read and write has a deadline.
package protocol AgentChannel {
    /// Sends one line (a newline is added); false when it could not be sent in time.
    func send(_ line: String, withinMilliseconds: Int64) -> Bool
    /// The next line, waiting at most `withinMilliseconds`.
    func readLine(withinMilliseconds: Int64) -> AgentRead
}

/// One read from the agent.
package enum AgentRead: Equatable, Sendable {
    case line(String)
    case closed
    case timedOut
    /// A line too long, or more than the total allowed.
    case garbage
}

/// Opens a connection to the agent at a socket path, or says why not.
package protocol AgentConnector {
    associatedtype Channel: AgentChannel
    func connect(_ path: String) -> Result<Channel, AgentUnreachable>
}

/// Why the agent could not be reached (for the log line).
package struct AgentUnreachable: Error, Equatable, Sendable {
    package var message: String
    package init(_ message: String) { self.message = message }
}

/// Milliseconds on a monotonic clock, for the overall deadline.
package protocol MonotonicTime {
    func nowMilliseconds() -> Int64
}

/// The login decision of a module that runs as the user (`geteuid() != 0`: a screen
/// locker). The same first steps as `LoginFlow` (disabled, user name, remote session), then
/// the agent does the rest as root and for the caller's own user only; this side relays
/// its lines to the conversation and believes only a well-formed `RESULT`. Deny by default:
/// no agent, a silent agent, an unreadable line, a closed connection → `PAM_AUTHINFO_UNAVAIL`.
package struct AgentLoginFlow<Connector: AgentConnector, Talk: Conversation, Users: UserDatabase, Time: MonotonicTime> {
    package let connector: Connector
    package let conversation: Talk
    package let users: Users
    package let time: Time
    package var trace: (String) -> Void = { _ in }

    /// The agent's socket, the application's conversation, the user database and a clock.
    package init(connector: Connector, conversation: Talk, users: Users, time: Time) {
        self.connector = connector
        self.conversation = conversation
        self.users = users
        self.time = time
    }

    /// The outcome for the module's return code and log line: the agent's `RESULT`, or
    /// `PAM_AUTHINFO_UNAVAIL` for anything short of one.
    package func authenticate(_ request: LoginRequest, options: Options) -> LoginOutcome {
        if options.disabled { return LoginOutcome(.ignore, "disabled") }
        if let problem = UserName.problem(request.user) {
            return LoginOutcome(.userUnknown, "user name not acceptable (\(problem))")
        }
        guard users.exists(request.user) else { return LoginOutcome(.userUnknown, "user unknown to the system") }
        if let why = request.remote, !options.allowRemote {
            return LoginOutcome(.ignore, "remote session skipped (\(why))")
        }
        trace("not root: asking the agent at \(options.agentSocket) for \(request.user), service \(request.service)")
        let channel: Connector.Channel
        switch connector.connect(options.agentSocket) {
        case let .success(c): channel = c
        case let .failure(why):
            return say(
                LoginOutcome(
                    .authInfoUnavailable,
                    "agent not reachable at \(options.agentSocket): \(why.message) (start fingerauth-agent: with systemd, "
                        + "systemctl enable --now fingerauth-agent.socket)"
                ),
                LoginTexts.agentMissing, request)
        }
        let ask = AgentRequest.login(
            user: request.user, service: ServiceName.claim(request.service), silent: request.silent)
        guard channel.send(ask.line, withinMilliseconds: AgentProtocol.firstLineMilliseconds) else {
            return say(
                LoginOutcome(.authInfoUnavailable, "agent did not take the request"), LoginTexts.readerUnavailable,
                request)
        }
        var deadline = time.nowMilliseconds() &+ AgentProtocol.firstLineMilliseconds
        var first = true
        while true {
            let left = deadline &- time.nowMilliseconds()
            let read = left > 0 ? channel.readLine(withinMilliseconds: left) : .timedOut
            switch read {
            case let .line(text):
                guard let reply = AgentReply(line: text) else {
                    return say(
                        LoginOutcome(.authInfoUnavailable, "agent sent an unreadable line"),
                        LoginTexts.readerUnavailable, request)
                }
                trace("agent: \(reply.line)")
                switch reply {
                case let .hello(ms) where first:
                    deadline = time.nowMilliseconds() &+ Int64(ms)
                case let .info(t):
                    guard conversation.info(t) else { return LoginOutcome(.conversationError, "conversation failed") }
                case let .error(t):
                    guard conversation.error(t) else { return LoginOutcome(.conversationError, "conversation failed") }
                case let .result(r):
                    return LoginOutcome(r.code, "agent: " + r.reason, kid: r.kid, jti: r.jti, finger: r.finger)
                case .hello, .status:
                    return say(
                        LoginOutcome(.authInfoUnavailable, "agent sent a line out of order"),
                        LoginTexts.readerUnavailable, request)
                }
                first = false
            case .closed:
                return say(
                    LoginOutcome(.authInfoUnavailable, "agent closed the connection without a verdict"),
                    LoginTexts.readerUnavailable, request)
            case .timedOut:
                return say(
                    LoginOutcome(.authInfoUnavailable, "agent gave no verdict in time"),
                    LoginTexts.readerUnavailable, request)
            case .garbage:
                return say(
                    LoginOutcome(.authInfoUnavailable, "agent sent too much"), LoginTexts.readerUnavailable, request
                )
            }
        }
    }

    private func say(_ outcome: LoginOutcome, _ text: String, _ request: LoginRequest) -> LoginOutcome {
        if !request.silent { _ = conversation.error(text) }
        return outcome
    }
}

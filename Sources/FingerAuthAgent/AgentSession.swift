import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// One client of the agent, handled in a process of its own (forked by `AgentServer`):
/// read one request within 2 s, check that the caller asks for its own user, take the
/// reader's lock, run the same login decision and the same helper as the module does as
/// root (`LoginFlow`, `HelperProcess`, the same attempt records), stream the user's texts
/// back and end with the verdict: a code and a fixed word (`OutcomeCategory`), never the
/// internal reason, a token, a key or a print. One log line at LOG_AUTHPRIV per request,
/// with the full reason.
struct AgentSession {
    let client: SocketLines
    /// The caller, as the kernel recorded it at connect (SO_PEERCRED).
    let uid: uid_t
    let pid: pid_t
    let configPath: String
    let lockPath: String
    /// Another uid waits for the reader and this uid just had it (`ReaderTurns`): a login
    /// is told the reader is busy without taking it.
    let yieldTurn: Bool

    /// Exit statuses the server reads (`ReaderTurns`); a death by a signal counts as `heldReader`.
    enum Exit {
        static let success: Int32 = 0
        static let other: Int32 = 1
        /// The client was told "reader busy" (the lock was taken, or it was another uid's turn).
        static let busy: Int32 = 11
        /// The request held the reader's lock, whatever its outcome.
        static let heldReader: Int32 = 12
    }

    /// Each line to the client must leave within this.
    static let writeMilliseconds: Int64 = 2000

    func run() -> Int32 {
        let started = MonotonicInstant.now()
        let log = AgentLog(uid: uid, pid: pid, started: started)
        let request: AgentRequest
        switch client.readLine(until: started.adding(milliseconds: AgentProtocol.requestMilliseconds)) {
        case let .line(text):
            guard let parsed = AgentRequest(line: text) else {
                log.write(LOG_NOTICE, "bad request: not a FINGERAUTH-AGENT 1 line; connection closed")
                return Exit.other
            }
            request = parsed
        case .timedOut:
            log.write(LOG_NOTICE, "bad request: none within \(AgentProtocol.requestMilliseconds) ms; connection closed")
            return Exit.other
        case .garbage:
            log.write(LOG_NOTICE, "bad request: longer than \(AgentProtocol.maxRequestBytes) bytes; connection closed")
            return Exit.other
        case .closed:
            log.write(LOG_NOTICE, "bad request: closed before a request")
            return Exit.other
        }
        switch request {
        case .status:
            _ = client.send(
                AgentReply.status(software: "fingerauth-agent/" + agentVersion).line,
                withinMilliseconds: AgentSession.writeMilliseconds)
            log.write(LOG_INFO, "status asked")
            return Exit.success
        case let .login(user, service, silent):
            return login(user: user, clientService: service, silent: silent, log: log)
        }
    }

    private func login(user: String, clientService: String, silent: Bool, log: AgentLog) -> Int32 {
        let talk = ClientConversation(session: self)
        /// Writes the log line (the full reason), then sends the verdict (the category only):
        /// whoever sees the verdict finds the line already written.
        func end(_ outcome: LoginOutcome, _ text: String? = nil, exit: Int32? = nil) -> Int32 {
            log.outcome(outcome, user: user, clientService: clientService)
            if let text, !silent { send(.error(text)) }
            send(
                .result(
                    AgentResult(
                        code: outcome.code, reason: outcome.category.rawValue, finger: outcome.finger,
                        kid: outcome.kid, jti: outcome.jti)))
            return exit ?? (outcome.code == .success ? Exit.success : Exit.other)
        }
        // The caller's own user only (as unix_chkpwd): uid -> name through NSS, byte for byte.
        let users = SystemUserDatabase()
        guard let caller = users.name(of: uid) else {
            return refuse(
                user: user, clientService: clientService, silent: silent, log: log,
                why: "caller uid \(uid) has no user name")
        }
        guard Array(caller.utf8) == Array(user.utf8) else {
            let shown = users.exists(user) ? user : "an unknown name"
            return refuse(
                user: user, clientService: clientService, silent: silent, log: log,
                why: "uid \(uid) (\(caller)) asked for another user (\(shown)); reader not armed")
        }
        let options: Options
        do {
            options = try OptionsLoader.load(
                arguments: ["conf=" + configPath],
                unprivilegedPortStart: KernelSettings.unprivilegedPortStart(),
                readFile: ConfigurationFile.read)
        } catch {
            return end(LoginOutcome(.serviceError, "configuration error: \(error)"))
        }
        let helper = HelperProcess()
        var flow = LoginFlow(
            helper: helper, store: FileEnrollmentStore(), conversation: talk, random: SystemRandom(),
            users: users, ledger: FileAttemptLedger(directory: options.attemptsDirectory),
            hostName: currentHostName())
        flow.trace = { _ in }
        // The token's `service` is the agent's own name; the client's word is only its
        // `client_service`. The module decided about remote sessions before it asked.
        let request = LoginRequest(
            user: user, service: AgentProtocol.serviceClaim, remote: nil, silent: silent,
            clientService: clientService)
        // Enrollment and the attempt limit (the same records as sudo and su), before the lock.
        let job: LoginJob
        switch flow.prepare(request, options: options) {
        case let .success(prepared): job = prepared
        case let .failure(stop): return end(stop.outcome)
        }
        if yieldTurn {
            var turn = LoginOutcome(
                .authInfoUnavailable, "another user waits for the reader and this uid just had it; reader not armed")
            turn.shownCategory = .otherUsersTurn
            return end(turn, AgentSession.busyText, exit: Exit.busy)
        }
        // One scan at a time per reader: a second client is told the reader is busy.
        guard let lock = ReaderLock(path: lockPath) else {
            var broken = LoginOutcome(.authInfoUnavailable, "reader lock \(lockPath) cannot be opened")
            broken.shownCategory = .readerUnavailable
            return end(broken, LoginTexts.readerUnavailable)
        }
        guard lock.tryLock() else {
            var busy = LoginOutcome(.authInfoUnavailable, "reader busy: another login is using it")
            busy.shownCategory = .readerBusy
            return end(busy, AgentSession.busyText, exit: Exit.busy)
        }
        let bound =
            helper.startupMilliseconds + Int64(options.timeoutSeconds) * 1000 + helper.scanGraceMilliseconds
            + helper.verdictMilliseconds + helper.exitGraceMilliseconds + 3 * AgentSession.writeMilliseconds
        send(.hello(milliseconds: Int(bound)))
        // From here until the verdict, a client that goes away ends this process (SIGIO):
        // the helper dies with it and the reader is free at once (the server logs it). The
        // failed attempt is counted before the helper starts, so such an end stays counted.
        client.signalOnHangup(true)
        let outcome = flow.run(job, request: request)
        client.signalOnHangup(false)
        lock.unlock()
        return end(outcome, exit: Exit.heldReader)
    }

    static let busyText = "Fingerprint reader busy: another login is using it"

    private func refuse(user: String, clientService: String, silent: Bool, log: AgentLog, why: String) -> Int32 {
        if !silent { send(.error("Fingerprint login refused: the agent answers only for your own user")) }
        var refused = LoginOutcome(.authError, "refused: " + why)
        refused.shownCategory = .notYourUser
        log.outcome(refused, user: nil, clientService: clientService)
        send(.result(AgentResult(code: refused.code, reason: refused.category.rawValue)))
        return Exit.other
    }

    @discardableResult
    func send(_ reply: AgentReply) -> Bool {
        client.send(reply.line, withinMilliseconds: AgentSession.writeMilliseconds)
    }
}

/// The texts `LoginFlow` shows, sent to the client as INFO and ERROR lines.
final class ClientConversation: Conversation {
    let session: AgentSession

    init(session: AgentSession) { self.session = session }

    func info(_ text: String) -> Bool { session.send(.info(text)) }

    func error(_ text: String) -> Bool { session.send(.error(text)) }
}

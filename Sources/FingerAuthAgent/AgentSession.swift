import CSystem
import FingerAuthCore
import FingerAuthSystem
#if canImport(Glibc)
import Glibc
#endif

/// One client of the agent, handled in a process of its own (forked by `AgentServer`):
/// read one request within 2 s, check that the caller asks for its own user, take the
/// reader's lock, run the same login decision and the same helper as the module does as
/// root (`LoginFlow`, `HelperProcess`), stream the user's texts back and end with the verdict.
/// Never a token, a key or a print. One log line at LOG_AUTHPRIV per request.
struct AgentSession {
    let client: SocketLines
    /// The caller, as the kernel recorded it at connect (SO_PEERCRED).
    let uid: uid_t
    let pid: pid_t
    let configPath: String
    let lockPath: String
    /// Failed logins of this uid (the reader armed, no success) within the failure window,
    /// when this process was forked.
    let recentFailures: Int

    /// Exit statuses the server counts.
    enum Exit {
        static let success: Int32 = 0
        static let counted: Int32 = 10
        static let other: Int32 = 1
    }

    static let failureLimit = 5
    static let failureWindowSeconds = 300
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
            _ = client.send(AgentReply.status(software: "fingerauth-agent/" + agentVersion).line, withinMilliseconds: AgentSession.writeMilliseconds)
            log.write(LOG_INFO, "status asked")
            return Exit.success
        case let .login(user, service, silent):
            return login(user: user, service: service, silent: silent, log: log)
        }
    }

    private func login(user: String, service: String, silent: Bool, log: AgentLog) -> Int32 {
        // Set once the user was asked for a finger: the reader was armed for this request.
        let talk = ClientConversation(session: self)
        func end(_ result: AgentResult, _ text: String?) -> Int32 {
            if let text, !silent { send(.error(text)) }
            send(.result(result))
            log.outcome(result, user: user, service: service)
            // A failure counts when the reader was armed for it (no match, refused, no
            // finger in time): so nobody can hold the one reader for others by asking again
            // and again; a failure before the reader (authenticator down) does not count.
            if result.code == .success { return Exit.success }
            return talk.armed ? Exit.counted : Exit.other
        }
        // The caller's own user only (as unix_chkpwd): uid -> name through NSS, byte for byte.
        guard let caller = userName(of: uid) else {
            return refuse(user: user, service: service, silent: silent, log: log, why: "caller uid \(uid) has no user name")
        }
        guard Array(caller.utf8) == Array(user.utf8) else {
            let shown = userExists(user) ? user : "an unknown name"
            return refuse(user: user, service: service, silent: silent, log: log,
                          why: "uid \(uid) (\(caller)) asked for another user (\(shown)); reader not armed")
        }
        guard recentFailures < AgentSession.failureLimit else {
            return end(AgentResult(code: .authInfoUnavailable,
                                   reason: "\(recentFailures) failed fingerprint logins in \(AgentSession.failureWindowSeconds / 60) min; reader not armed"),
                       "Fingerprint login unavailable: too many failed attempts, use the password")
        }
        let options: Options
        do {
            options = try OptionsLoader.load(arguments: ["conf=" + configPath],
                                             unprivilegedPortStart: KernelSettings.unprivilegedPortStart(),
                                             readFile: readConfigFile)
        } catch {
            return end(AgentResult(code: .serviceError, reason: "configuration error: \(error)"), nil)
        }
        // One scan at a time per reader: a second client is told the reader is busy.
        guard let lock = ReaderLock(path: lockPath) else {
            return end(AgentResult(code: .authInfoUnavailable, reason: "reader lock \(lockPath) cannot be opened"),
                       LoginFlow.Text.readerUnavailable)
        }
        guard lock.tryLock() else {
            return end(AgentResult(code: .authInfoUnavailable, reason: "reader busy: another login is using it"),
                       "Fingerprint reader busy: another login is using it")
        }
        let helper = HelperProcess()
        let bound = helper.startupMilliseconds + Int64(options.timeoutSeconds) * 1000 + helper.scanGraceMilliseconds
            + helper.verdictMilliseconds + helper.exitGraceMilliseconds + 3 * AgentSession.writeMilliseconds
        send(.hello(milliseconds: Int(bound)))
        // From here until the verdict, a client that goes away ends this process (SIGIO):
        // the helper dies with it and the reader is free at once (the server logs it).
        client.signalOnHangup(true)
        var flow = LoginFlow(helper: helper, store: FileEnrollmentStore(), conversation: talk,
                             random: SystemRandom(), users: NSSUsers(), hostName: currentHostName())
        flow.trace = { _ in }
        // The module decided about remote sessions before it asked (it sees PAM_RHOST).
        let outcome = flow.authenticate(LoginRequest(user: user, service: service, remote: nil, silent: silent), options: options)
        client.signalOnHangup(false)
        lock.unlock()
        return end(AgentResult(code: outcome.code, reason: outcome.reason, finger: outcome.finger, kid: outcome.kid,
                               jti: outcome.jti), nil)
    }

    private func refuse(user: String, service: String, silent: Bool, log: AgentLog, why: String) -> Int32 {
        if !silent { send(.error("Fingerprint login refused: the agent answers only for your own user")) }
        let result = AgentResult(code: .authError, reason: "refused: " + why)
        send(.result(result))
        log.outcome(result, user: nil, service: service)
        return Exit.other
    }

    @discardableResult
    func send(_ reply: AgentReply) -> Bool {
        client.send(reply.line, withinMilliseconds: AgentSession.writeMilliseconds)
    }
}

/// The texts `LoginFlow` shows, sent to the client as INFO and ERROR lines; remembers
/// whether the user was asked for a finger (the reader armed).
final class ClientConversation: Conversation {
    let session: AgentSession
    private(set) var armed = false

    init(session: AgentSession) { self.session = session }

    func info(_ text: String) -> Bool {
        if text == LoginFlow.Text.placeFinger { armed = true }
        return session.send(.info(text))
    }

    func error(_ text: String) -> Bool { session.send(.error(text)) }
}

/// The configuration file, as the module reads it: root-owned, not writable by others.
func readConfigFile(_ path: String) throws(ConfigError) -> String? {
    do {
        return String(decoding: try SafeFile.read(path, rule: .config), as: UTF8.self)
    } catch {
        if case .missing = error { return nil }
        throw ConfigError(source: path, message: error.description)
    }
}

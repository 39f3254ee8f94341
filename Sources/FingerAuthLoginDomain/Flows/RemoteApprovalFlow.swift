import FingerAuthCore

/// `remote = approve` (docs/ARCHITECTURE.md, "Remote approval"): a remote login (ssh, or
/// sudo inside it) that the user approves with a finger on their own workstation. The
/// helper is started in the background with the request's `approval` (where the login
/// comes from); it asks the authenticator with this host's key and says `APPROVAL <code>
/// <workstations>`. Then the module asks once, echo off — "Touch the reader on ws-alice
/// (code 47) — Enter to wait, or type your password:" — as `prompt = parallel` does:
///
/// - on the caller's own terminal the helper ends the read with a newline once the
///   authenticator says approved: `PAM_SUCCESS` with nobody pressing a key;
/// - elsewhere (sshd's keyboard-interactive prompt) the person presses Enter after the
///   touch; an empty answer waits for the verdict until the approval's timeout;
/// - a typed password: the helper is asked to withdraw the request (never two prompts for
///   one login), the password goes to the next module, `PAM_AUTHINFO_UNAVAIL`;
/// - a failed conversation (Ctrl-C): withdrawn, `PAM_CONV_ERR`: never a pass.
///
/// Only `ACCEPTED` naming the module's own `jti`, after the `MATCH` that names the
/// approving workstation, with exit status 0, succeeds. No reader, prints or device key of
/// this host take part: the user need not be enrolled here.
package struct RemoteApprovalFlow<
    Helper: LoginHelper, Store: EnrollmentStore, Talk: Conversation, Random: RandomSource, Users: UserDatabase,
    Ledger: AttemptLedger, Background: BackgroundLoginHelper, Prompt: SecretPrompt
> {
    package typealias Login = LoginFlow<Helper, Store, Talk, Random, Users, Ledger>
    package let login: Login
    package let helper: Background
    package let prompt: Prompt
    /// The caller's own terminal (`SessionTerminal`): the helper ends the prompt there. Nil
    /// where the conversation reads no terminal of ours (sshd's keyboard-interactive).
    package let terminal: TerminalTarget?
    /// Where the login comes from: the client's address and the login's terminal name.
    package let origin: ApprovalAsk

    /// How long the helper has to reach the authenticator and say `APPROVAL`.
    package static var askMilliseconds: Int64 { 6000 }

    package init(login: Login, helper: Background, prompt: Prompt, terminal: TerminalTarget?, origin: ApprovalAsk) {
        self.login = login
        self.helper = helper
        self.prompt = prompt
        self.terminal = terminal
        self.origin = origin
    }

    package func authenticate(_ request: LoginRequest, options: Options) -> LoginOutcome {
        var job: LoginJob
        switch prepare(request, options: options) {
        case let .success(prepared): job = prepared
        case let .failure(stop): return stop.outcome
        }
        // Every end of a remote approval says why, even under PAM_SILENT (sudo always passes
        // it): a person who touched nothing, answered "Not me" or whose authenticator is down
        // must learn why the password is asked, as an offline login is always told.
        var request = request
        request.silent = false
        job.terminal = terminal
        login.trace(
            "remote approval: jti \(job.jti); asking from \(origin.clientAddress.isEmpty ? "-" : origin.clientAddress)"
                + " on \(origin.terminal.isEmpty ? "-" : origin.terminal); \(terminal.map { "ends the prompt on " + $0.path } ?? "Enter ends the prompt")"
        )
        let running: RunningLogin
        switch helper.start(job) {
        case let .success(started): running = started
        case let .failure(why): return login.decide(why.outcome, job: job, request: request)
        }
        let code: String
        let workstations: String
        switch running.approvalPrompt(untilMilliseconds: Self.askMilliseconds) {
        case let .asked(asked, names):
            code = asked
            workstations = names
        case let .ended(outcome):
            running.stop()
            let ended = outcome ?? .unavailable("the login helper did not ask the authenticator in time")
            return login.decide(ended, job: job, request: request)
        }
        let texts = login.texts(request, options)
        let place = workstations == "-" ? "your workstation" : workstations.replacingAll(",", with: ", ")
        let question = texts.text(
            terminal == nil ? .approvalPromptEnter : .approvalPrompt, workstation: place, code: code)
        let answer = prompt.askSecret(question)
        // Enter: wait for the person's finger on the workstation, up to the approval's end;
        // else only what the helper said meanwhile (it keeps running, to withdraw).
        let empty = answer?.isEmpty == true
        let verdict = running.verdict(
            untilMilliseconds: empty ? Int64(options.approveTimeoutSeconds) * 1000 + 2000 : 0)
        login.trace(
            "remote approval prompt returned (\(answer == nil ? "conversation failed" : answer?.isEmpty == true ? "empty" : "answered")); helper: \(verdict.map { $0.logText } ?? "no verdict, withdrawn")"
        )
        if let verdict, verdict.isAcceptance {
            return login.decide(verdict, job: job, request: request)
        }
        running.withdraw()
        guard let answer else {
            return LoginOutcome(.conversationError, "conversation failed at the remote approval prompt", jti: job.jti)
        }
        let helperSaid = verdict.map { parallelSummary($0) } ?? "no decision yet, withdrawn"
        if !answer.isEmpty {
            guard answer.handToNextModule() else {
                return LoginOutcome(
                    .systemError, "password typed at the remote approval prompt could not be stored as PAM_AUTHTOK",
                    jti: job.jti)
            }
            return LoginOutcome(
                .authInfoUnavailable,
                "password typed at the remote approval prompt, handed to the next module (\(helperSaid))",
                jti: job.jti)
        }
        guard let verdict else {
            return login.say(
                LoginOutcome(.authInfoUnavailable, "remote approval: no decision in time", jti: job.jti),
                .approvalTimedOut, request, options)
        }
        return login.decide(verdict, job: job, request: request)
    }

    /// What is decided before the helper starts: disabled, the user name, the user known
    /// here, a fresh `jti`. No enrollment and no attempts here: the finger is elsewhere, and
    /// the authenticator bounds the requests.
    func prepare(_ request: LoginRequest, options: Options) -> Result<LoginJob, Login.Stop> {
        if options.disabled { return .failure(Login.Stop(LoginOutcome(.ignore, "disabled"))) }
        if let problem = UserName.problem(request.user) {
            return .failure(Login.Stop(LoginOutcome(.userUnknown, "user name not acceptable (\(problem))")))
        }
        guard login.users.exists(request.user) else {
            return .failure(Login.Stop(LoginOutcome(.userUnknown, "user unknown to the system")))
        }
        guard let jtiBytes = login.random.bytes(16), jtiBytes.count == 16 else {
            return .failure(Login.Stop(LoginOutcome(.systemError, "no random bytes for jti")))
        }
        var job = LoginJob(
            user: request.user, service: ServiceName.claim(request.service), jti: Base64URL.encode(jtiBytes),
            issuer: options.hostID ?? login.hostName, options: options)
        job.approval = origin
        return .success(job)
    }
}

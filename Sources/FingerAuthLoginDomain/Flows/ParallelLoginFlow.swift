import FingerAuthCore

/// `prompt = parallel` (docs/ARCHITECTURE.md, "Password or finger"): the helper is started
/// in the background, then the module asks once, echo off, "Password or place your
/// finger: ". The module has no thread, so while the conversation blocks the helper scans,
/// and after the authenticator accepted it injects one newline into the caller's terminal,
/// which ends the read. When the conversation returns, the module reads what the helper
/// wrote meanwhile, without waiting:
///
/// - `ACCEPTED` for its own `jti` after a `MATCH`, exit status 0 → `PAM_SUCCESS`; whatever
///   the conversation returned is discarded (wiped);
/// - anything else → the helper is killed at once (so nothing is injected after the read
///   ended); a typed password becomes `PAM_AUTHTOK` and the result is
///   `PAM_AUTHINFO_UNAVAIL`, so that `pam_unix … try_first_pass` takes it without asking
///   again; an empty line hands nothing on and the stack goes on as in sequential mode.
///
/// Scan messages ("No match…") are not shown in this mode: the conversation is blocked and
/// the module cannot show them; a helper that wrote to the user's terminal would break
/// the pending prompt. They are in the debug log. Deny by default throughout.
package struct ParallelLoginFlow<
    Helper: LoginHelper, Store: EnrollmentStore, Talk: Conversation, Random: RandomSource, Users: UserDatabase,
    Ledger: AttemptLedger, Background: BackgroundLoginHelper, Prompt: SecretPrompt
> {
    package typealias Login = LoginFlow<Helper, Store, Talk, Random, Users, Ledger>
    package let login: Login
    package let helper: Background
    package let prompt: Prompt
    package let terminal: TerminalTarget

    package init(login: Login, helper: Background, prompt: Prompt, terminal: TerminalTarget) {
        self.login = login
        self.helper = helper
        self.prompt = prompt
        self.terminal = terminal
    }

    package func authenticate(_ request: LoginRequest, options: Options) -> LoginOutcome {
        var job: LoginJob
        switch login.prepare(request, options: options) {
        case let .success(prepared): job = prepared
        case let .failure(stop): return stop.outcome
        }
        job.terminal = terminal
        login.trace(
            "enrolled; jti \(job.jti); starting \(options.loginHelper) in the background (prompt = parallel, \(terminal.path))"
        )
        // As in the sequential login, the attempt is counted before the helper starts (a host
        // killed at the prompt leaves it counted); the module reads nothing while the prompt
        // blocks, so it is taken back below when no finger was tried.
        if let why = login.countAttempt(job.user) {
            return login.say(
                LoginOutcome(.authInfoUnavailable, "attempt record: \(why); reader not armed", jti: job.jti),
                .readerUnavailable, request, options)
        }
        let running: RunningLogin
        switch helper.start(job) {
        case let .success(started): running = started
        case let .failure(why):
            login.takeBackAttempt(job.user)
            return login.decide(why.outcome, job: job, request: request)
        }
        let answer = prompt.askSecret(login.texts(request, options).text(.passwordOrFinger))
        let verdict = running.verdictNow()
        login.trace(
            "parallel prompt returned (\(answer == nil ? "conversation failed" : "answered")); helper: \(verdict.map { $0.logText } ?? "no verdict yet, stopped")"
        )
        if let verdict, verdict.isAcceptance {
            // The finger won (or matched at the very moment Enter was pressed): the answer is dropped.
            let decided = login.decide(verdict, job: job, request: request)
            if decided.code == .success { login.clearAttempts(job.user) }
            return decided
        }
        running.stop()
        if noFingerTried(verdict, typedPassword: answer.map { !$0.isEmpty } ?? false) {
            login.takeBackAttempt(job.user)
        }
        guard let answer else { return LoginOutcome(.conversationError, "conversation failed at the parallel prompt") }
        let helperSaid = verdict.map { parallelSummary($0) } ?? "fingerprint step still running, stopped"
        if answer.isEmpty {
            return LoginOutcome(
                .authInfoUnavailable, "empty answer at the parallel prompt (\(helperSaid))", jti: job.jti)
        }
        guard answer.handToNextModule() else {
            return LoginOutcome(
                .systemError, "password typed at the parallel prompt could not be stored as PAM_AUTHTOK", jti: job.jti)
        }
        return LoginOutcome(
            .authInfoUnavailable, "password typed at the parallel prompt, handed to the next module (\(helperSaid))",
            jti: job.jti)
    }
}

/// True when the request did not try a finger: the reader never armed (the authenticator
/// unreachable, the key unusable), or the person answered with a password while no
/// finger had been put on the reader (no match, no refusal). Such a request is not a
/// failed attempt; anything else (an empty answer, a wrong finger, a killed prompt) is.
func noFingerTried(_ verdict: HelperOutcome?, typedPassword: Bool) -> Bool {
    switch verdict {
    case .unreachable?, .keyUnusable?, .lidClosed?: return true
    case nil, .unavailable?: return typedPassword
    case .accepted?, .acceptedOffline?, .refused?, .authenticatorUnavailable?, .tooManyTries?, .conversationFailed?:
        return false
    }
}

/// What the helper had got to, for the log line (no secrets: codes and reasons only).
func parallelSummary(_ outcome: HelperOutcome) -> String {
    switch outcome {
    case .accepted: return "finger accepted"
    case let .acceptedOffline(_, _, _, grant, _, cause): return "finger accepted offline (grant \(grant), \(cause))"
    case let .refused(_, _, _, _, why): return "authenticator refused: " + why
    case let .authenticatorUnavailable(_, _, _, why): return "authenticator unavailable: " + why
    case let .unreachable(why): return "authenticator unreachable: " + why
    case let .keyUnusable(why): return "device key: " + why
    case let .lidClosed(why): return "lid closed: " + why
    case .tooManyTries: return "no match, too many tries"
    case let .unavailable(why): return why
    case .conversationFailed: return "conversation failed"
    }
}

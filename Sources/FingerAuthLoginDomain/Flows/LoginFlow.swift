import FingerAuthCore

/// Who is logging in, as PAM told the module.
package struct LoginRequest: Sendable {
    package var user: String
    package var service: String
    /// Why this is a remote session (`PAM_RHOST`, the session's record, utmp…), or nil
    /// when nothing the caller cannot forge says so.
    package var remote: String?
    /// `PAM_SILENT`: no explanations when the fingerprint path fails. The scan's own
    /// prompts ("Place your finger…", "No match…") are still shown: sudo always passes
    /// PAM_SILENT, and a person cannot use a reader nobody asked them to touch
    /// (pam_fprintd prompts under PAM_SILENT too).
    package var silent: Bool
    /// The agent's logins only: the service the client named (`AgentProtocol` LOGIN), which
    /// nobody vouches for. The token's `service` is then the agent's own name and this goes
    /// into a claim of its own (`client_service`); the `text.NAME.SERVICE` lines use it.
    package var clientService: String?

    package init(
        user: String, service: String, remote: String? = nil, silent: Bool = false, clientService: String? = nil
    ) {
        self.user = user
        self.service = service
        self.remote = remote
        self.silent = silent
        self.clientService = clientService
    }
}

/// What the module returns, and what its one log line says.
package struct LoginOutcome: Equatable, Sendable {
    package var code: PAMCode
    /// Short, secret-free reason for the log line.
    package var reason: String
    package var kid: String?
    package var jti: String?
    package var finger: String?
    /// Why, as one fixed word (set with the text the person was shown); `category` falls
    /// back on the code.
    package var shownCategory: OutcomeCategory?
    /// When the helper's steps came, for the log line; nil when no helper ran or no clock was given.
    package var stages: LoginStages?

    package init(_ code: PAMCode, _ reason: String, kid: String? = nil, jti: String? = nil, finger: String? = nil) {
        self.code = code
        self.reason = reason
        self.kid = kid
        self.jti = jti
        self.finger = finger
    }

    /// The fixed word for this outcome (what the agent tells its client).
    package var category: OutcomeCategory { shownCategory ?? OutcomeCategory(code: code) }
}

/// Milliseconds from the helper's start to each of its steps, as the module saw them: the
/// reader armed and the authenticator reached (`READY`), the finger matched (`MATCH`, which
/// includes the person's own time), and the verdict (signing and the round trip after the
/// match). A step that did not come is nil.
package struct LoginStages: Equatable, Sendable {
    package var ready: Int64?
    package var match: Int64?
    package var verdict: Int64?

    package init(ready: Int64? = nil, match: Int64? = nil, verdict: Int64? = nil) {
        self.ready = ready
        self.match = match
        self.verdict = verdict
    }

    /// ` ready_ms=21 match_ms=25 answer_ms=9`: READY after the start, MATCH after READY, the
    /// verdict after MATCH; the steps that came, nothing else.
    package var logFields: String {
        var text = ""
        if let ready { text += " ready_ms=\(ready)" }
        if let match { text += " match_ms=\(match - (ready ?? 0))" }
        if let verdict, let match { text += " answer_ms=\(verdict - match)" }
        return text
    }
}

/// The login decision in plain Swift (docs/ARCHITECTURE.md, "The login decision in plain
/// Swift"): deny by default, every path picks its own PAM code, and only a verdict of the
/// helper that names the module's own `jti` and says "accepted" succeeds.
///
/// The ports are generic parameters, not existentials: the module compiles this in Embedded
/// Swift, which has no existentials of non-class protocols; every use is specialised.
package struct LoginFlow<
    Helper: LoginHelper, Store: EnrollmentStore, Talk: Conversation, Random: RandomSource, Users: UserDatabase,
    Ledger: AttemptLedger
> {
    package let helper: Helper
    package let store: Store
    package let conversation: Talk
    package let random: Random
    package let users: Users
    /// The failed attempts of each user (`AttemptLimit`), shared with every other way the
    /// reader is asked.
    package let ledger: Ledger
    /// Host name for `iss` when `host_id` is not set.
    package let hostName: String
    /// The caller's language for the texts (gettext in the module): an English text (the
    /// msgid) to the caller's; English by default.
    package var translate: (String) -> String = { $0 }
    /// Step lines for the `debug` log (names, codes and ids only; never a key or a token).
    package var trace: (String) -> Void = { _ in }
    /// Milliseconds on a monotonic clock, which times the helper's steps (`LoginStages`);
    /// nil: not timed.
    package var clock: (() -> Int64)?

    package init(
        helper: Helper, store: Store, conversation: Talk, random: Random, users: Users, ledger: Ledger,
        hostName: String
    ) {
        self.helper = helper
        self.store = store
        self.conversation = conversation
        self.random = random
        self.users = users
        self.ledger = ledger
        self.hostName = hostName
    }

    package func authenticate(_ request: LoginRequest, options: Options) -> LoginOutcome {
        switch prepare(request, options: options) {
        case let .success(job): return run(job, request: request)
        case let .failure(stop): return stop.outcome
        }
    }

    /// Runs the helper for a prepared job and decides. The failed attempt is counted before
    /// the helper starts (it opens the reader): whatever ends the request from then on — a
    /// hang-up, a signal, the host killed at the prompt, a crash — leaves it counted. It is
    /// taken back only when the helper ended on its own before `READY` (the reader never
    /// armed: authenticator unreachable, reader busy, no key), and cleared by a success.
    package func run(_ job: LoginJob, request: LoginRequest) -> LoginOutcome {
        if let why = countAttempt(job.user) {
            return say(
                LoginOutcome(.authInfoUnavailable, "attempt record: \(why); reader not armed", jti: job.jti),
                .readerUnavailable, request, job.options)
        }
        trace("enrolled; jti \(job.jti); starting \(job.options.loginHelper)")
        let texts = self.texts(request, job.options)
        var armed = false
        let started = clock?()
        var stages = LoginStages()
        let elapsed = { () -> Int64? in
            guard let started, let now = clock?() else { return nil }
            return now - started
        }
        let outcome = helper.run(job) { message in
            trace("login helper: \(message.line)")
            switch message {
            case .ready:
                armed = true
                stages.ready = elapsed()
            case .match: stages.match = elapsed()
            case .accepted, .offline, .refused, .unavailable: stages.verdict = elapsed()
            default: break
            }
            return relay(message, texts)
        }
        trace("helper outcome: \(outcome.logText)")
        if !armed { takeBackAttempt(job.user) }
        var decided = decide(outcome, job: job, request: request)
        if started != nil { decided.stages = stages }
        if decided.code == .success { clearAttempts(job.user) }
        return decided
    }

    /// Why a login ends before the helper starts (the outcome to return).
    package struct Stop: Error {
        package var outcome: LoginOutcome
        init(_ outcome: LoginOutcome) { self.outcome = outcome }
    }

    /// What is decided before the helper starts, and its request: disabled, the user name,
    /// the remote session, the enrollment, a fresh `jti`. Shared by the sequential and the
    /// parallel prompt.
    package func prepare(_ request: LoginRequest, options: Options) -> Result<LoginJob, Stop> {
        if options.disabled { return .failure(Stop(LoginOutcome(.ignore, "disabled"))) }
        if let problem = UserName.problem(request.user) {
            return .failure(Stop(LoginOutcome(.userUnknown, "user name not acceptable (\(problem))")))
        }
        guard users.exists(request.user) else {
            return .failure(Stop(LoginOutcome(.userUnknown, "user unknown to the system")))
        }
        trace("user \(request.user), service \(request.service), remote \(request.remote ?? "no")")
        if let why = request.remote, !options.allowRemote {
            return .failure(Stop(LoginOutcome(.ignore, "remote session skipped (\(why))")))
        }
        switch store.enrollment(of: request.user, options: options) {
        case .notEnrolled: return .failure(Stop(LoginOutcome(.ignore, "user not enrolled")))
        case let .unsafe(why):
            return .failure(Stop(say(LoginOutcome(.authInfoUnavailable, why), .readerUnavailable, request, options)))
        case .enrolled: break
        }
        if let stop = attemptsStop(request, options) { return .failure(stop) }
        guard let jtiBytes = random.bytes(16), jtiBytes.count == 16 else {
            return .failure(Stop(LoginOutcome(.systemError, "no random bytes for jti")))
        }
        var job = LoginJob(
            user: request.user, service: ServiceName.claim(request.service),
            jti: Base64URL.encode(jtiBytes), issuer: options.hostID ?? hostName, options: options)
        job.clientService = request.clientService.map { ServiceName.claim($0) }
        guard job.text.utf8.count <= LoginJob.maxBytes else {
            return .failure(
                Stop(
                    LoginOutcome(
                        .serviceError, "configuration too large for one login request (over \(LoginJob.maxBytes) bytes)"
                    )))
        }
        return .success(job)
    }

    /// After the helper: its outcome as a PAM code (deny by default: only an acceptance of
    /// the module's own `jti` succeeds), with the text the person sees unless silent.
    package func decide(_ outcome: HelperOutcome, job: LoginJob, request: LoginRequest) -> LoginOutcome {
        let options = job.options
        switch outcome {
        case let .accepted(jti, kid, finger), let .acceptedOffline(jti, kid, finger, _, _, _):
            guard sameBytes(jti, job.jti) else {
                return say(
                    LoginOutcome(
                        .authInfoUnavailable, "login helper answered for another token", kid: kid, jti: job.jti,
                        finger: finger), .readerUnavailable, request, options)
            }
            guard case let .acceptedOffline(_, _, _, grant, expires, cause) = outcome else {
                return LoginOutcome(
                    .success, "finger \(finger) matched, authenticator accepted", kid: kid, jti: job.jti, finger: finger
                )
            }
            let until = UTCTime.minutes(expires)
            // Shown even under PAM_SILENT: the person must know this login was not checked online.
            _ = conversation.info(texts(request, options).text(.offlineLogin, expires: until))
            return LoginOutcome(
                .success,
                "finger \(finger) matched, authenticator unreachable (\(cause)): offline grant \(grant), expires \(until)",
                kid: kid, jti: job.jti, finger: finger)
        case let .refused(_, kid, finger, code, why):
            return say(
                LoginOutcome(.authError, why, kid: kid, jti: job.jti, finger: finger), code.text, request, options)
        case let .authenticatorUnavailable(_, kid, finger, why):
            return say(
                LoginOutcome(.authInfoUnavailable, why, kid: kid, jti: job.jti, finger: finger),
                .authenticatorUnavailable, request, options)
        case let .unreachable(why):
            return say(LoginOutcome(.authInfoUnavailable, why), .authenticatorUnavailable, request, options)
        case let .keyUnusable(why):
            return say(LoginOutcome(.authInfoUnavailable, "device key: " + why), .readerUnavailable, request, options)
        case let .lidClosed(why):
            // No text: the password prompt that follows is the whole answer (`lid = skip`).
            var skipped = LoginOutcome(.authInfoUnavailable, "lid closed: " + why)
            skipped.shownCategory = .lidClosed
            return skipped
        case .tooManyTries:
            return say(
                LoginOutcome(.maxTries, "no match after \(job.options.maxTries) tries"), .tooManyTries, request, options
            )
        case let .unavailable(why):
            return say(LoginOutcome(.authInfoUnavailable, why), .readerUnavailable, request, options)
        case .conversationFailed:
            return LoginOutcome(.conversationError, "conversation failed")
        }
    }

    /// The texts for this login (the options' words, the caller's language).
    package func texts(_ request: LoginRequest, _ options: Options) -> PromptTexts {
        PromptTexts(options: options, service: request.clientService ?? request.service, translate: translate)
    }

    private func relay(_ message: HelperMessage, _ texts: PromptTexts) -> Bool {
        switch message {
        case .ready: return conversation.info(texts.text(.placeFinger))
        case let .retry(hint): return conversation.info(hint)
        case let .noMatch(left) where left > 0: return conversation.info(texts.text(.noMatch, left: left))
        default: return true
        }
    }

    /// Shows `text` (unless silent) and returns `outcome`; a failing conversation does not
    /// change a failure into anything else.
    func say(_ outcome: LoginOutcome, _ text: TextName, _ request: LoginRequest, _ options: Options) -> LoginOutcome {
        if !request.silent { _ = conversation.error(texts(request, options).text(text)) }
        var said = outcome
        said.shownCategory = OutcomeCategory(shown: text, code: outcome.code)
        return said
    }
}

/// Texts the person at the keyboard sees (the English msgids of `TextName`).
package enum LoginTexts {
    package static let placeFinger = "Place your finger on the fingerprint reader"
    /// The one prompt of `prompt = parallel` (echo off): the password, or a finger meanwhile.
    package static let passwordOrFinger = "Password or place your finger: "
    package static func noMatch(left: Int) -> String { "No match, try again (\(left) left)" }
    package static let tooManyTries = "Fingerprint not recognised; too many tries"
    package static let readerUnavailable = "Fingerprint login unavailable"
    package static let authenticatorUnavailable = "Fingerprint login unavailable: authenticator not reachable"
    package static let refused = "Fingerprint login refused by the authenticator"
    package static let policyDenied = "Fingerprint login not allowed here by the authenticator's policy"
    package static let tooManyAttempts = "Fingerprint login unavailable: too many failed attempts, use the password"
    package static let offlineLogin =
        "Authenticator not reachable: logged in offline with this host's offline grant (expires {expires})"
    /// What the user sees when no agent answers; names the command that says the fix for
    /// this host (systemd's socket unit, or the agent started by the host's own init).
    package static let agentMissing =
        "Fingerprint login unavailable: the fingerprint agent is not running (fingerauth status says how to start it)"
}

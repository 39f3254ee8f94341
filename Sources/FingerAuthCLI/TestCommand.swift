import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth test`: the whole login as the module runs it — the same `LoginFlow` and the
/// same login helper (`HelperProcess` → `fingerauth-login`), started the same clean way —
/// each step timed and printed as it completes. Nothing is faked: a success is a real login
/// at the authenticator (audited as one, with service `--service`).
enum TestCommand {
    static let usage = """
        usage: fingerauth test [--user U] [--service NAME] [--config F] [--state-dir D]
          Runs the login the PAM module would run: enrollment check, then the login helper
          (reader, device key and the authenticator made ready; put your finger on the reader
          when asked; signing and the POST). One line per step: outcome and time in ms. --service sets the token's
          `service` claim (default fingerauth-test). Needs root.
          Exit status: 0 only if the authenticator accepted the login; 1 otherwise (the last
          line says why and what to do); 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions.union(["service"]))
        let service = args["service"] ?? "fingerauth-test"
        guard PortableWord.isValid(service) else { throw UsageError(message: "--service must be a PAM service name") }
        try Context.requireRoot("test")
        let started = MonotonicInstant.now()
        let context: Context
        do {
            context = try Context(args, requireURL: true)
        } catch {
            Step.report(false, "config", error.message, since: started)
            throw CommandError("the configuration blocks fingerprint login; fix it and run fingerauth status")
        }
        Step.report(true, "config", "\(context.configPath), url \(context.options.url?.text ?? "-")", since: started)
        if context.options.disabled {
            Step.report(
                false, "result", "disabled = yes in the configuration: the module does nothing (PAM_IGNORE)",
                since: started)
            return 1
        }
        let flow = LoginFlow(
            helper: TimedHelper(), store: TimedStore(), conversation: PrintingConversation(),
            random: SystemRandom(), users: SystemUserDatabase(),
            ledger: FileAttemptLedger(directory: context.options.attemptsDirectory), hostName: currentHostName())
        let outcome = flow.authenticate(LoginRequest(user: context.user, service: service), options: context.options)
        let accepted = outcome.code == .success
        let detail =
            accepted
            ? "accepted by the authenticator for \(context.user) (PAM_SUCCESS)"
            : "\(outcome.code): \(outcome.reason)" + advice(outcome, user: context.user)
        Step.report(accepted, "result", detail, since: started)
        return accepted ? 0 : 1
    }

    private static func advice(_ outcome: LoginOutcome, user: String) -> String {
        switch outcome.code {
        case .ignore where outcome.reason.contains("not enrolled"): return "; enroll: fingerauth enroll --user \(user)"
        case .authError: return "; check the key: fingerauth status --user \(user) (register or rotate it)"
        case .maxTries: return "; the finger did not match the enrolled prints"
        case .authInfoUnavailable: return "; run fingerauth status --user \(user) to see which part is missing"
        default: return ""
        }
    }
}

/// One line per step: `ok   NAME  detail  (N ms)` or `FAIL NAME  detail  (N ms)`.
enum Step {
    static func report(_ ok: Bool, _ name: String, _ detail: String, since start: MonotonicInstant) {
        let ms = MonotonicInstant.now().milliseconds - start.milliseconds
        let label = name + String(repeating: " ", count: max(1, 14 - name.count))
        say("\(ok ? "ok  " : "FAIL") \(label) \(detail) (\(ms) ms)")
    }
}

/// The module's login helper, with a timed line for each of its phases: `prepare` (reader
/// open, key loaded, authenticator reached), `scan`, `authenticator`.
struct TimedHelper: LoginHelper {
    func run(_ job: LoginJob, relay: (HelperMessage) -> Bool) -> HelperOutcome {
        var start = MonotonicInstant.now()
        var reader = "the reader"
        var phase = "prepare"
        let url = job.options.url?.text ?? "-"
        let outcome = HelperProcess().run(job) { message in
            switch message {
            case let .ready(name):
                reader = name
                Step.report(true, "prepare", "\(name) open, device key loaded, \(url) reached", since: start)
                start = MonotonicInstant.now()
                phase = "scan"
            case let .match(finger):
                Step.report(true, "scan", "\(finger) matched on \(reader) via \(job.options.loginHelper)", since: start)
                start = MonotonicInstant.now()
                phase = "authenticator"
            case let .accepted(_, kid):
                Step.report(true, "authenticator", "POST \(url) accepted, kid \(kid)", since: start)
            case let .refused(_, _, code, detail):
                Step.report(false, "authenticator", "POST \(url): \(detail) [\(code.rawValue)]", since: start)
            case let .unavailable(_, _, detail):
                Step.report(false, "authenticator", "POST \(url): \(detail)", since: start)
            default: break
            }
            return relay(message)
        }
        switch outcome {
        case .tooManyTries: Step.report(false, "scan", "no match in \(job.options.maxTries) tries", since: start)
        case let .unreachable(why), let .keyUnusable(why), let .unavailable(why), let .lidClosed(why):
            Step.report(false, phase, why, since: start)
        case .conversationFailed: Step.report(false, phase, "stopped", since: start)
        default: break
        }
        return outcome
    }
}

/// The module's enrollment check, timed.
struct TimedStore: EnrollmentStore {
    let store = FileEnrollmentStore()

    func enrollment(of user: String, options: Options) -> EnrollmentState {
        let start = MonotonicInstant.now()
        let state = store.enrollment(of: user, options: options)
        switch state {
        case .enrolled: Step.report(true, "enrollment", "\(user) has prints and a device key", since: start)
        case .notEnrolled: Step.report(false, "enrollment", "\(user) has no prints or no device key", since: start)
        case let .unsafe(why): Step.report(false, "enrollment", why, since: start)
        }
        return state
    }
}

/// What the module would show the user, shown here indented.
struct PrintingConversation: Conversation {
    func info(_ text: String) -> Bool {
        say("     > \(text)")
        return true
    }
    func error(_ text: String) -> Bool {
        say("     > \(text)")
        return true
    }
}

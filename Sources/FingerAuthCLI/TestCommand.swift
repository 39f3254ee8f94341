#if canImport(Glibc)
import Glibc
#endif
import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthSystem

/// `fingerauth test`: the whole login as the module runs it — the same `LoginFlow`, with the
/// same scan helper (`HelperScanner` → `fingerauth-scan`), device key and libcurl transport —
/// each step timed and printed as it completes. Nothing is faked: a success is a real login
/// at the authenticator (audited as one, with service `--service`).
enum TestCommand {
    static let usage = """
        usage: fingerauth test [--user U] [--service NAME] [--config F] [--state-dir D]
          Runs the login the PAM module would run: enrollment and key check, a scan through the
          scan helper (put your finger on the reader when asked), signing, POST to the
          authenticator. One line per step: outcome and time in ms. --service sets the token's
          `service` claim (default fingerauth-test). Needs root.
          Exit status: 0 only if the authenticator accepted the login; 1 otherwise (the last
          line says why and what to do); 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try Arguments(words, options: Context.commonOptions.union(["service"]), flags: [])
        let service = args["service"] ?? "fingerauth-test"
        guard UserName.isValid(service) else { throw UsageError("--service must be a PAM service name") }
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
            Step.report(false, "result", "disabled = yes in the configuration: the module does nothing (PAM_IGNORE)", since: started)
            return 1
        }
        let flow = LoginFlow(scanner: TimedScanner(), store: TimedStore(), transport: TimedTransport(),
                             conversation: PrintingConversation(), clock: SystemClock(), random: SystemRandom(),
                             users: PasswdUsers(), hostName: currentHostName())
        let outcome = flow.authenticate(LoginRequest(user: context.user, service: service), options: context.options)
        let accepted = outcome.code == .success
        let detail = accepted ? "accepted by the authenticator for \(context.user) (PAM_SUCCESS)"
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

/// The module's scanner, timed.
struct TimedScanner: FingerprintScanner {
    func scan(user: String, options: Options, relay: (ScanMessage) -> Bool) -> ScanOutcome {
        let start = MonotonicInstant.now()
        var reader = "the reader"
        let outcome = HelperScanner().scan(user: user, options: options) { message in
            if case let .ready(name) = message { reader = name }
            return relay(message)
        }
        switch outcome {
        case let .matched(finger): Step.report(true, "scan", "\(finger) matched on \(reader) via \(options.scanHelper)", since: start)
        case .tooManyTries: Step.report(false, "scan", "no match in \(options.maxTries) tries", since: start)
        case let .unavailable(why): Step.report(false, "scan", why, since: start)
        case .conversationFailed: Step.report(false, "scan", "stopped", since: start)
        }
        return outcome
    }
}

/// The module's enrollment store, timed; hands out a timed signer.
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

    func signer(for user: String, options: Options) -> Result<TokenSigner, KeyLoadError> {
        let start = MonotonicInstant.now()
        switch store.signer(for: user, options: options) {
        case let .success(signer):
            Step.report(true, "device key", "kid \(signer.kid)", since: start)
            return .success(TimedSigner(inner: signer))
        case let .failure(error):
            Step.report(false, "device key", error.message, since: start)
            return .failure(error)
        }
    }
}

struct TimedSigner: TokenSigner {
    let inner: TokenSigner
    var kid: String { inner.kid }
    func signRS256(_ input: [UInt8]) -> [UInt8]? {
        let start = MonotonicInstant.now()
        let signature = inner.signRS256(input)
        Step.report(signature != nil, "sign", signature != nil ? "RS256 token signed" : "signing failed", since: start)
        return signature
    }
}

/// The module's libcurl transport, timed.
struct TimedTransport: AuthenticatorTransport {
    func post(json: [UInt8], options: Options) -> TransportResult {
        let start = MonotonicInstant.now()
        let result = CurlTransport().post(json: json, options: options)
        let url = options.url?.text ?? "-"
        switch result {
        case let .answered(status, body):
            let reason = (try? JSONParser().parse(body))?["error"]?.stringValue.map { ": " + Authenticator.printable($0) } ?? ""
            Step.report((200..<300).contains(status), "authenticator", "POST \(url) answered \(status)\(reason)", since: start)
        case let .failed(why):
            Step.report(false, "authenticator", "POST \(url): \(why)", since: start)
        }
        return result
    }
}

/// What the module would show the user, shown here indented.
struct PrintingConversation: Conversation {
    func info(_ text: String) -> Bool { say("     > \(text)"); return true }
    func error(_ text: String) -> Bool { say("     > \(text)"); return true }
}

/// The system's user database (getpwnam).
struct PasswdUsers: UserDatabase {
    func exists(_ user: String) -> Bool { getpwnam(user) != nil }
}

import CPAM
import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

/// libpam's entry point for `auth` lines (docs/ARCHITECTURE.md, "The processes").
/// Everything is built per call; the module keeps no state between calls. The module only
/// orchestrates: the login helper, started clean, does the reader, the key and the network.
@_cdecl("pam_sm_authenticate")
public func pam_sm_authenticate(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guard let pamh else { return PAMCode.systemError.rawValue }
    let handle = PAMHandle(raw: pamh)
    guard let arguments = moduleArguments(argc, argv) else {
        handle.syslog(
            LOG_ERR,
            "configuration error, fingerprint login disabled: more than \(maxArguments) pam.d arguments, or one longer than \(maxArgumentBytes) bytes"
        )
        return PAMCode.serviceError.rawValue
    }
    return authenticate(handle, flags: flags, arguments: arguments).rawValue
}

/// Nothing to set: the module grants no credentials of its own.
@_cdecl("pam_sm_setcred")
public func pam_sm_setcred(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    PAMCode.success.rawValue
}

func authenticate(_ handle: PAMHandle, flags: Int32, arguments: [String]) -> PAMCode {
    let started = MonotonicInstant.now()
    let service = handle.stringItem(PAM_SERVICE) ?? "unknown"
    let options: Options
    do {
        options = try OptionsLoader.load(
            arguments: arguments, unprivilegedPortStart: KernelSettings.unprivilegedPortStart(),
            readFile: ConfigurationFile.read)
    } catch {
        handle.syslog(LOG_ERR, "configuration error, fingerprint login disabled: \(error)")
        return .serviceError
    }
    let log = ModuleLog(handle: handle, debug: options.debug, debugFile: options.debugFile)
    log.step("options read; url \(options.url?.text ?? "-"), helper \(options.loginHelper)")

    let asked = handle.user()
    guard let user = asked.name else {
        log.outcome(
            LoginOutcome(asked.failure, "pam_get_user failed"), user: nil, service: service,
            milliseconds: MonotonicInstant.now().milliseconds - started.milliseconds)
        return asked.failure
    }
    let request = LoginRequest(
        user: user, service: service, remote: remoteReason(handle, options: options, user: user, trace: log.step),
        silent: flags & Int32(bitPattern: PAM_SILENT) != 0)
    /// The login as root: the helper started here, the texts in the caller's language.
    func rootLoginFlow() -> RootLoginFlow {
        var flow = LoginFlow(
            helper: HelperProcess(), store: FileEnrollmentStore(),
            conversation: PAMConversation(handle: handle),
            random: SystemRandom(), users: SystemUserDatabase(),
            ledger: FileAttemptLedger(directory: options.attemptsDirectory), hostName: currentHostName())
        flow.trace = log.step
        flow.clock = { SystemMonotonicTime().nowMilliseconds() }
        if let translator = GettextTranslator(directory: options.localeDirectory) {
            flow.translate = translator.translate
        }
        return flow
    }
    let outcome: LoginOutcome
    if geteuid() != 0 {
        // A host that runs as the user (a screen locker) can neither read the root-only
        // state nor start the helper as root: fingerauth-agent does both, for the caller's
        // own user only (docs/ARCHITECTURE.md, "The agent").
        var flow = AgentLoginFlow(
            connector: AgentSocketConnector(), conversation: PAMConversation(handle: handle),
            users: SystemUserDatabase(), time: SystemMonotonicTime())
        flow.trace = log.step
        outcome = flow.authenticate(request, options: options)
    } else if options.prompt == .parallel, let terminal = SessionTerminal.find(handle) {
        // One echo-off prompt while the helper scans (docs/ARCHITECTURE.md, "Password or
        // finger"); the conversation blocks this process, the helper does the waiting.
        let flow = ParallelLoginFlow(
            login: rootLoginFlow(), helper: BackgroundHelper(), prompt: PAMSecretPrompt(handle: handle),
            terminal: terminal)
        outcome = flow.authenticate(request, options: options)
    } else {
        if options.prompt == .parallel {
            log.step("prompt = parallel, but not on the caller's own terminal: sequential")
        }
        outcome = rootLoginFlow().authenticate(request, options: options)
    }
    log.outcome(
        outcome, user: user, service: service,
        milliseconds: MonotonicInstant.now().milliseconds - started.milliseconds)
    return outcome.code
}

/// The root login's ports: the helper started here, the PAM conversation, the system's records.
typealias RootLoginFlow = LoginFlow<
    HelperProcess, FileEnrollmentStore, PAMConversation, SystemRandom, SystemUserDatabase, FileAttemptLedger
>

package let maxArguments = 64
package let maxArgumentBytes = 4096

/// The pam.d arguments as Swift strings; nil when there are more than 64 of them or one is
/// longer than 4 KiB (dropping one silently could drop, say, `pinned_pubkey=`).
package func moduleArguments(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String]? {
    guard let argv, argc > 0 else { return [] }
    guard argc <= maxArguments else { return nil }
    var out: [String] = []
    for i in 0..<Int(argc) {
        guard let p = argv[i] else { continue }
        let length = fa_strnlen(p, maxArgumentBytes + 1)
        guard length <= maxArgumentBytes else { return nil }
        out.append(
            p.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            })
    }
    return out
}

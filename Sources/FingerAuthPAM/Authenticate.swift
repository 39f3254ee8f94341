import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

/// `pam_sm_authenticate`, decided here for the module (docs/ARCHITECTURE.md, "The
/// processes"): the options, the remote session, then the login as root (the helper
/// started from here, `prompt = parallel` on the caller's own terminal) or, for a host that
/// runs as the user, through fingerauth-agent. One log line per attempt, in the host.
func authenticate(_ handle: ModuleHandle, _ request: ModuleRequest) -> PAMCode {
    let channel = handle.channel
    let service = handle.stringItem(.service) ?? "unknown"
    let options: Options
    do {
        options = try OptionsLoader.load(
            arguments: request.arguments, unprivilegedPortStart: KernelSettings.unprivilegedPortStart(),
            readFile: ConfigurationFile.read)
    } catch {
        handle.syslog(LOG_ERR, "configuration error, fingerprint login disabled: \(error)")
        return .serviceError
    }
    let log = ModuleLog(handle: handle, debug: options.debug, debugFile: options.debugFile)
    log.step("options read; url \(options.url?.text ?? "-"), helper \(options.loginHelper)")
    let elapsed = { MonotonicInstant.now().milliseconds - request.started }

    let asked = handle.user()
    guard let user = asked.name else {
        log.outcome(
            LoginOutcome(asked.failure, "pam_get_user failed"), user: nil, service: service, milliseconds: elapsed())
        return asked.failure
    }
    let users = ModuleUserDatabase(channel: channel)
    let login = LoginRequest(
        user: user, service: service,
        remote: remoteReason(handle, caller: request, options: options, user: user, users: users, trace: log.step),
        silent: request.flags & pamSilent != 0)
    /// The login as root: the helper started here, the texts in the caller's language.
    func rootLoginFlow() -> RootLoginFlow {
        var flow = LoginFlow(
            helper: HelperProcess(), store: FileEnrollmentStore(), conversation: ModuleConversation(channel: channel),
            random: SystemRandom(), users: users,
            ledger: FileAttemptLedger(directory: options.attemptsDirectory), hostName: currentHostName())
        flow.trace = log.step
        flow.clock = { SystemMonotonicTime().nowMilliseconds() }
        if let locale = handle.callerLocale(),
            let translator = GettextTranslator(locale: locale, directory: options.localeDirectory)
        {
            flow.translate = translator.translate
        }
        return flow
    }
    let outcome: LoginOutcome
    if request.effectiveUID != 0 {
        // A host that runs as the user (a screen locker) can neither read the root-only
        // state nor start the helper as root: fingerauth-agent does both, for the caller's
        // own user only (docs/ARCHITECTURE.md, "The agent").
        var flow = AgentLoginFlow(
            connector: AgentSocketConnector(), conversation: ModuleConversation(channel: channel),
            users: users, time: SystemMonotonicTime())
        flow.trace = log.step
        outcome = flow.authenticate(login, options: options)
    } else if let why = login.remote, options.remoteApproval {
        // A remote login approved by a finger on the user's own workstation
        // (docs/ARCHITECTURE.md, "Remote approval"): one prompt, as `prompt = parallel` asks it.
        let origin = remoteOrigin(handle, caller: request, options: options, user: user, users: users)
        if !origin.caller.isEmpty, options.approveCallers == .ownUser {
            // `su bob` in alice's session must not ask bob's workstation (approve_callers).
            outcome = LoginOutcome(
                .ignore,
                "remote session skipped (\(why)); no approval asked: \(origin.caller) asks for "
                    + "another user's login (approve_callers = self)")
        } else {
            let flow = RemoteApprovalFlow(
                login: rootLoginFlow(), helper: BackgroundHelper(), prompt: ModuleSecretPrompt(channel: channel),
                terminal: handle.terminal(), origin: origin)
            outcome = flow.authenticate(login, options: options)
        }
    } else if options.prompt == .parallel, let terminal = handle.terminal() {
        // One echo-off prompt while the helper scans (docs/ARCHITECTURE.md, "Password or
        // finger"); the module's conversation blocks, the helper does the waiting.
        let flow = ParallelLoginFlow(
            login: rootLoginFlow(), helper: BackgroundHelper(), prompt: ModuleSecretPrompt(channel: channel),
            terminal: terminal)
        outcome = flow.authenticate(login, options: options)
    } else {
        if options.prompt == .parallel {
            log.step("prompt = parallel, but not on the caller's own terminal: sequential")
        }
        outcome = rootLoginFlow().authenticate(login, options: options)
    }
    // Deny by default: a module that stopped answering on the way gets no success.
    guard !channel.broken else { return outcome.code == .success ? .authInfoUnavailable : outcome.code }
    log.outcome(outcome, user: user, service: service, milliseconds: elapsed())
    return outcome.code
}

/// `PAM_SILENT` of `<security/_pam_types.h>` (this process does not link libpam).
let pamSilent: Int32 = 0x8000

/// The root login's ports: the helper started here, the conversation through the module,
/// the system's records.
typealias RootLoginFlow = LoginFlow<
    HelperProcess, FileEnrollmentStore, ModuleConversation, SystemRandom, ModuleUserDatabase, FileAttemptLedger
>

import CPAM
import CSystem
import FingerAuthLoginDomain
import FingerAuthSystem

/// Starts fingerauth-pam for one call of the module and answers its `ModuleCall`s on this
/// PAM handle until its `RESULT` (docs/ARCHITECTURE.md, "The module and fingerauth-pam").
/// The module's own part is what only the host can do: libpam's items, user and
/// conversation, the host's environment (the SSH variables, the language) and its terminal.
/// The answer to the secret prompt stays here, wiped when the run ends.
final class ModuleBridge {
    private let handle: PAMHandle
    /// The last answer of the secret prompt, kept for `AUTHTOK`.
    private var secret: PAMSecret?

    init(handle: PAMHandle) { self.handle = handle }

    func run(_ request: ModuleRequest, failure: PAMCode) -> PAMCode {
        let location: String
        switch ModuleLocation.find(request.arguments) {
        case let .success(found): location = found
        case let .failure(error):
            if request.entry == .openSession {
                handle.syslog(LOG_ERR, "session: configuration error; remote session not recorded")
                return failure
            }
            handle.syslog(LOG_ERR, "configuration error, fingerprint login disabled: \(error)")
            return .serviceError
        }
        var answered = request
        if request.entry == .authenticate { answered.known = knownAnswers() }
        var input = Array(answered.text.utf8)
        // Known answers only save time: a request they would make too large goes without.
        if input.count > ChildProcess.maxInputBytes, !answered.known.isEmpty { input = Array(request.text.utf8) }
        guard input.count <= ChildProcess.maxInputBytes else {
            handle.syslog(
                LOG_ERR,
                "configuration error, fingerprint login disabled: pam.d arguments over \(ChildProcess.maxInputBytes) bytes in all"
            )
            return request.entry == .authenticate ? .serviceError : failure
        }
        let child: ChildProcess
        switch TrustedExecutable.open(location).flatMap({
            ChildProcess.spawn(
                $0, arguments: [ModuleProtocol.executableName], input: input,
                maxLineBytes: ModuleProtocol.maxLineBytes, maxTotalBytes: ModuleProtocol.maxTotalBytes,
                keepInput: true)
        }) {
        case let .success(started): child = started
        case let .failure(why):
            handle.syslog(
                LOG_ERR, "fingerprint login unavailable: cannot start \(ModuleProtocol.executableName): \(why)")
            return failure
        }
        defer { secret = nil }
        let code = answerCalls(child, failure: failure)
        child.closeInput()
        // fingerauth-pam ends right after its RESULT; a short grace, then it is killed.
        child.finish(until: MonotonicInstant.now().adding(milliseconds: 1000))
        return code
    }

    private func answerCalls(_ child: ChildProcess, failure: PAMCode) -> PAMCode {
        while true {
            let deadline = MonotonicInstant.now().adding(milliseconds: ModuleProtocol.callMilliseconds)
            let call: ModuleCall
            switch child.readLine(until: deadline) {
            case let .line(text):
                guard let parsed = ModuleCall(line: text) else {
                    return stop(child, "an unreadable line", failure)
                }
                call = parsed
            case .timedOut: return stop(child, "no answer within \(ModuleProtocol.callMilliseconds / 1000) s", failure)
            case .garbage: return stop(child, "a line too long, or too much output", failure)
            case .endOfOutput: return stop(child, "it ended without a result", failure)
            }
            if case let .result(code) = call { return code }
            guard child.writeLine(answer(call).line) else {
                return stop(child, "it stopped reading", failure)
            }
        }
    }

    private func stop(_ child: ChildProcess, _ why: String, _ failure: PAMCode) -> PAMCode {
        child.kill()
        handle.syslog(LOG_ERR, "fingerprint login unavailable: \(ModuleProtocol.executableName): \(why)")
        return failure
    }

    /// What every login asks first, answered with the request (`ModuleKnownAnswer`): the
    /// items, the SSH variables, the language and, when libpam already has the user (so that
    /// `pam_get_user` would not prompt), the user, its uid and that uid's name. An answer
    /// longer than 1 KiB is left to be asked in turn.
    private func knownAnswers() -> [ModuleKnownAnswer] {
        var known: [ModuleKnownAnswer] = []
        func add(_ call: ModuleCall, _ answer: ModuleAnswer) {
            guard answer.line.utf8.count <= 1024, let answered = ModuleKnownAnswer(call, answer) else { return }
            known.append(answered)
        }
        let questions: [ModuleCall] = [.item(.service), .item(.tty), .item(.remoteHost), .sshVariables, .locale]
        for call in questions { add(call, answer(call)) }
        guard let user = handle.stringItem(PAM_USER), !user.isEmpty else { return known }
        add(.user, .value(user))
        let uid = answer(.uid(of: user))
        add(.uid(of: user), uid)
        if case let .value(text) = uid, let number = UInt32(text) { add(.name(of: number), answer(.name(of: number))) }
        return known
    }

    private func answer(_ call: ModuleCall) -> ModuleAnswer {
        switch call {
        case let .item(item):
            let code: Int32
            switch item {
            case .service: code = PAM_SERVICE
            case .tty: code = PAM_TTY
            case .remoteHost: code = PAM_RHOST
            case .remoteUser: code = PAM_RUSER
            }
            return handle.stringItem(code).map { .value($0) } ?? .none
        case .user:
            let asked = handle.user()
            return asked.name.map { .value($0) } ?? .failed(asked.failure)
        case let .uid(name): return SystemUserDatabase().uid(of: name).map { .value("\($0)") } ?? .none
        case let .name(uid): return SystemUserDatabase().name(of: uid).map { .value($0) } ?? .none
        case .sshVariables: return handle.inSSHSession() ? .ok : .none
        case .locale: return CallerLocale.fromEnvironment().map { .value($0) } ?? .none
        case .terminal:
            return SessionTerminal.find(handle).map { .value("\($0.device) \($0.path)") } ?? .none
        case let .info(text): return said(fa_pam_message(handle.raw, PAM_TEXT_INFO, text))
        case let .error(text): return said(fa_pam_message(handle.raw, PAM_ERROR_MSG, text))
        case let .secret(text):
            secret = nil
            var typed: UnsafeMutablePointer<CChar>?
            let rc = fa_pam_prompt_secret(handle.raw, text, &typed)
            guard rc == PAM_SUCCESS, let typed else {
                fa_pam_wipe_free(typed)
                return .failed(rc == PAM_SUCCESS ? .conversationError : PAMCode(rawValue: rc))
            }
            let kept = PAMSecret(handle: handle, bytes: typed)
            secret = kept
            return kept.isEmpty ? .empty : .given
        case .handOnSecret:
            guard let secret else { return .failed(.systemError) }
            return said(secret.handToNextModule())
        case let .log(priority, text):
            handle.syslog(priority, text)
            return .ok
        case .result: return .failed(.systemError) // never answered: run() returns first
        }
    }

    private func said(_ rc: Int32) -> ModuleAnswer { rc == PAM_SUCCESS ? .ok : .failed(PAMCode(rawValue: rc)) }
}

/// The conversation's answer, kept in the C buffer the application allocated: never
/// copied into a Swift string, wiped and freed when released, given only to libpam.
final class PAMSecret {
    private let handle: PAMHandle
    private let bytes: UnsafeMutablePointer<CChar>

    init(handle: PAMHandle, bytes: UnsafeMutablePointer<CChar>) {
        self.handle = handle
        self.bytes = bytes
    }

    var isEmpty: Bool { bytes.pointee == 0 }

    /// PAM_AUTHTOK for the next module of the stack.
    func handToNextModule() -> Int32 { fa_pam_set_authtok(handle.raw, bytes) }

    deinit { fa_pam_wipe_free(bytes) }
}

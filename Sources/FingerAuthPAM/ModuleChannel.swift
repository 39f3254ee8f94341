import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// fingerauth-pam's side of `ModuleProtocol`: calls on standard output, the module's
/// answers on standard input, one at a time. Used from one thread only. Once a call has
/// failed (the module gone, an unreadable answer, no answer in time) every later call fails
/// too, and the login is denied.
final class ModuleChannel {
    /// The most fingerauth-pam waits for one answer. A conversation call waits for the
    /// person (a password typed at the parallel prompt), so this is long; the module itself
    /// never waits for fingerauth-pam without a bound.
    static let answerMilliseconds: Int64 = 15 * 60 * 1000

    private var answers = BoundedLineReader(
        maxLineBytes: ModuleProtocol.maxLineBytes, maxTotalBytes: 16 * 1024 * 1024, chunkBytes: 4096)
    private(set) var broken = false
    /// The request's known answers: their calls are answered from here.
    private var known: [ModuleKnownAnswer] = []

    /// The module's request, read from standard input within two seconds.
    func readRequest() -> ModuleRequest? {
        let deadline = MonotonicInstant.now().adding(milliseconds: 2000)
        let request = ModuleRequest.read(maxArguments: 64) { () -> String? in
            guard case let .line(text) = answers.next(from: STDIN_FILENO, until: deadline) else { return nil }
            return text
        }
        known = request?.known ?? []
        return request
    }

    /// Sends `call` and returns the module's answer; nil once the channel is broken. A
    /// question the request answered is not sent.
    func ask(_ call: ModuleCall) -> ModuleAnswer? {
        guard !broken else { return nil }
        if let answered = known.first(where: { $0.call == call }) { return answered.answer }
        guard send(call) else { return nil }
        let deadline = MonotonicInstant.now().adding(milliseconds: ModuleChannel.answerMilliseconds)
        guard case let .line(text) = answers.next(from: STDIN_FILENO, until: deadline),
            let answer = ModuleAnswer(line: text)
        else {
            broken = true
            return nil
        }
        return answer
    }

    /// The last line: the code the module returns.
    func finish(_ code: PAMCode) {
        _ = send(.result(code))
    }

    private func send(_ call: ModuleCall) -> Bool {
        let bytes = Array((call.line + "\n").utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes {
                write(STDOUT_FILENO, $0.baseAddress.map { $0 + written }, bytes.count - written)
            }
            if n < 0 && fa_errno() == EINTR { continue }
            guard n > 0 else {
                broken = true
                return false
            }
            written += n
        }
        return true
    }
}

/// What the module's code used to ask libpam and the host directly, now asked through the
/// channel: the same names, so that the login reads as it did inside the module.
struct ModuleHandle {
    let channel: ModuleChannel

    /// pam_get_item for a string item; nil when unset or not answered.
    func stringItem(_ item: ModuleItem) -> String? {
        guard case let .value(text)? = channel.ask(.item(item)) else { return nil }
        return text
    }

    /// pam_get_user; on failure the code to return.
    func user() -> (name: String?, failure: PAMCode) {
        switch channel.ask(.user) {
        case let .value(name)?: return (name, .success)
        case let .failed(code)?: return (nil, code == .conversationError ? .conversationError : .userUnknown)
        default: return (nil, .systemError)
        }
    }

    /// SSH variables in the PAM or the host's environment. A module that does not answer
    /// counts as "remote": the variables can only ever add that.
    func inSSHSession() -> Bool {
        switch channel.ask(.sshVariables) {
        case .none?: return false
        default: return true
        }
    }

    /// The caller's language, already checked by the module and checked again here.
    func callerLocale() -> String? {
        guard case let .value(name)? = channel.ask(.locale), LocaleName.isTranslatable(name) else { return nil }
        return name
    }

    /// The caller's own terminal for `prompt = parallel`, as the module found it.
    func terminal() -> TerminalTarget? {
        guard case let .value(text)? = channel.ask(.terminal) else { return nil }
        let fields = text.split(separator: " ", maxSplits: 1)
        guard fields.count == 2, let first = fields.first, let device = UInt64(first), let path = fields.last,
            TerminalTarget.devicePath(fromPAMTTY: String(path)) == String(path)
        else { return nil }
        return TerminalTarget(path: String(path), device: device)
    }

    /// One pam_syslog line (LOG_AUTHPRIV) in the host.
    func syslog(_ priority: Int32, _ message: String) {
        _ = channel.ask(.log(priority: priority, text: message))
    }
}

/// The host's user database, through the module: the users the host itself knows (its
/// NSS), as when the module looked them up in the host. The last name's answer is kept: a
/// login asks for the same user twice (the remote check, then the flow's `exists`).
final class ModuleUserDatabase: UserDatabase {
    let channel: ModuleChannel
    private var last: (user: String, uid: UInt32?)?

    init(channel: ModuleChannel) { self.channel = channel }

    func exists(_ user: String) -> Bool { uid(of: user) != nil }

    func uid(of user: String) -> UInt32? {
        if let last, last.user == user { return last.uid }
        let uid: UInt32?
        if case let .value(text)? = channel.ask(.uid(of: user)) { uid = UInt32(text) } else { uid = nil }
        // A channel that broke answers nothing: not kept, so nothing is believed later either.
        if !channel.broken { last = (user, uid) }
        return uid
    }

    func name(of uid: UInt32) -> String? {
        guard case let .value(name)? = channel.ask(.name(of: uid)) else { return nil }
        return name
    }
}

/// The PAM conversation, through the module.
struct ModuleConversation: Conversation {
    let channel: ModuleChannel

    func info(_ text: String) -> Bool { channel.ask(.info(text)) == .ok }
    func error(_ text: String) -> Bool { channel.ask(.error(text)) == .ok }
}

/// The echo-off prompt of `prompt = parallel`, asked by the module, which keeps the answer.
struct ModuleSecretPrompt: SecretPrompt {
    let channel: ModuleChannel

    func askSecret(_ text: String) -> SecretAnswer? {
        switch channel.ask(.secret(text)) {
        case .empty?: return ModuleSecret(channel: channel, isEmpty: true)
        case .given?: return ModuleSecret(channel: channel, isEmpty: false)
        default: return nil
        }
    }
}

/// The answer the module keeps: fingerauth-pam knows only whether it was empty.
final class ModuleSecret: SecretAnswer {
    private let channel: ModuleChannel
    let isEmpty: Bool

    init(channel: ModuleChannel, isEmpty: Bool) {
        self.channel = channel
        self.isEmpty = isEmpty
    }

    func handToNextModule() -> Bool { channel.ask(.handOnSecret) == .ok }
}

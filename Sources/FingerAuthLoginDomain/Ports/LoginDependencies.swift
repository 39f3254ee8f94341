import FingerAuthCore

/// The parts the login decision talks to. The module plugs in real adapters (the login
/// helper process, the PAM conversation, the system's user database); unit tests plug in
/// scripted fakes.

/// Runs the whole login step (reader, device key, signing, the authenticator) in the login
/// helper and relays each message; `relay` returns false when the conversation failed, and
/// the helper must then be stopped.
package protocol LoginHelper {
    func run(_ job: LoginJob, relay: (HelperMessage) -> Bool) -> HelperOutcome
}

/// How the helper's login step ended, as the module read it from the helper's lines and
/// exit status. Verdicts carry the `jti` they name: the decision checks it is the module's.
package enum HelperOutcome: Equatable, Sendable {
    /// The finger matched and the authenticator accepted the token `jti` (helper exited 0).
    case accepted(jti: String, kid: String, finger: String)
    /// The authenticator could not be reached; the finger matched and the helper logged in
    /// within the offline grant `grant`, which ends at `expires` (helper exited 0); `cause`
    /// names why the authenticator counted as unreachable.
    case acceptedOffline(jti: String, kid: String, finger: String, grant: String, expires: Int64, cause: String)
    /// The finger matched; the authenticator refused the token: `code` chooses the text the
    /// person sees, `reason` is for the log.
    case refused(jti: String, kid: String, finger: String?, code: RefusalCode, reason: String)
    /// The finger matched; the authenticator did not answer properly (5xx, timeout…).
    case authenticatorUnavailable(jti: String, kid: String, finger: String?, reason: String)
    /// The authenticator could not be reached before the scan began: the reader was never armed.
    case unreachable(String)
    /// The device key could not be used.
    case keyUnusable(String)
    case tooManyTries
    /// The lid is closed and the reader is under it (`lid = skip`): the reader was never armed.
    case lidClosed(String)
    /// No reader, busy, helper crashed or timed out…: the reason is for the log.
    case unavailable(String)
    case conversationFailed
}

extension HelperMessage {
    /// The acceptance an `ACCEPTED` or `OFFLINE` line stands for once `finger` matched; nil
    /// for every other line.
    package func acceptance(finger: String) -> HelperOutcome? {
        switch self {
        case let .accepted(jti, kid): return .accepted(jti: jti, kid: kid, finger: finger)
        case let .offline(jti, kid, grant, expires, cause):
            return .acceptedOffline(jti: jti, kid: kid, finger: finger, grant: grant, expires: expires, cause: cause)
        default: return nil
        }
    }
}

extension HelperOutcome {
    /// An acceptance, online or within an offline grant: the only outcomes that may succeed.
    package var isAcceptance: Bool {
        switch self {
        case .accepted, .acceptedOffline: return true
        default: return false
        }
    }
}

/// Whether a user is enrolled on this host.
package enum EnrollmentState: Equatable, Sendable {
    case enrolled
    case notEnrolled
    /// State exists but may not be trusted (wrong owner or mode, a link…).
    case unsafe(String)
}

/// The per-user state under `state_dir`, as far as the module looks at it: presence only.
/// The helper reads the prints and the key.
package protocol EnrollmentStore {
    func enrollment(of user: String, options: Options) -> EnrollmentState
}

/// The PAM conversation: text for the person at the keyboard.
package protocol Conversation {
    /// PAM_TEXT_INFO; false when the application's conversation failed.
    func info(_ text: String) -> Bool
    /// PAM_ERROR_MSG; false when the application's conversation failed.
    func error(_ text: String) -> Bool
}

/// The system's user database (getpwnam_r in the module).
package protocol UserDatabase {
    func exists(_ user: String) -> Bool
}

extension HelperOutcome {
    /// The outcome for the debug log, spelled as Swift prints an enum case (Embedded Swift
    /// cannot print an arbitrary value): ids, codes and reasons, never a key or a token.
    package var logText: String {
        switch self {
        case let .accepted(jti, kid, finger):
            return "accepted(jti: \"\(jti)\", kid: \"\(kid)\", finger: \"\(finger)\")"
        case let .acceptedOffline(jti, kid, finger, grant, expires, cause):
            return
                "acceptedOffline(jti: \"\(jti)\", kid: \"\(kid)\", finger: \"\(finger)\", grant: \"\(grant)\", expires: \(expires), cause: \"\(cause)\")"
        case let .refused(jti, kid, finger, code, reason):
            return
                "refused(jti: \"\(jti)\", kid: \"\(kid)\", finger: \(quoted(finger)), code: \(code.rawValue), reason: \"\(reason)\")"
        case let .authenticatorUnavailable(jti, kid, finger, reason):
            return
                "authenticatorUnavailable(jti: \"\(jti)\", kid: \"\(kid)\", finger: \(quoted(finger)), reason: \"\(reason)\")"
        case let .unreachable(why): return "unreachable(\"\(why)\")"
        case let .keyUnusable(why): return "keyUnusable(\"\(why)\")"
        case .tooManyTries: return "tooManyTries"
        case let .lidClosed(why): return "lidClosed(\"\(why)\")"
        case let .unavailable(why): return "unavailable(\"\(why)\")"
        case .conversationFailed: return "conversationFailed"
        }
    }

    private func quoted(_ text: String?) -> String {
        text.map { "Optional(\"\($0)\")" } ?? "nil"
    }
}

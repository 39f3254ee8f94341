/// Why a login ended, as one fixed word: what the agent tells its client in the `RESULT`
/// line, and what the module then logs (`reason="agent: reader-busy"`). The client is an
/// unprivileged process: it hears the category, never the internal reason (paths, TLS
/// errors, the state of other users), which stays in the agent's own log line.
package enum OutcomeCategory: String, CaseIterable, Sendable {
    case accepted
    case skipped
    case userUnknown = "user-unknown"
    case noMatch = "no-match"
    case refused
    case policyDenied = "policy-denied"
    case authenticatorUnavailable = "authenticator-unavailable"
    case readerUnavailable = "reader-unavailable"
    case readerBusy = "reader-busy"
    case lidClosed = "lid-closed"
    case otherUsersTurn = "other-users-turn"
    case tooManyAttempts = "too-many-attempts"
    case agentBusy = "agent-busy"
    case notYourUser = "not-your-user"
    case configurationError = "configuration-error"
    case conversationFailed = "conversation-failed"
    case systemError = "system-error"
    case unavailable

    /// The category a PAM code alone says, when nothing more precise was noted.
    package init(code: PAMCode) {
        switch code {
        case .success: self = .accepted
        case .ignore: self = .skipped
        case .userUnknown: self = .userUnknown
        case .maxTries: self = .noMatch
        case .authError: self = .refused
        case .serviceError: self = .configurationError
        case .conversationError: self = .conversationFailed
        case .systemError: self = .systemError
        default: self = .unavailable
        }
    }

    /// The category of the text the person was shown.
    init(shown text: TextName, code: PAMCode) {
        switch text {
        case .tooManyTries: self = .noMatch
        case .readerUnavailable: self = .readerUnavailable
        case .authenticatorUnavailable: self = .authenticatorUnavailable
        case .refused: self = .refused
        case .policyDenied: self = .policyDenied
        case .tooManyAttempts: self = .tooManyAttempts
        case .approvalDenied, .approvalTimedOut, .approvalHeld: self = .refused
        case .placeFinger, .passwordOrFinger, .noMatch, .offlineLogin, .approvalPrompt, .approvalPromptEnter:
            self = OutcomeCategory(code: code)
        }
    }
}

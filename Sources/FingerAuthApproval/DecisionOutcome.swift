import FingerAuthCore

/// How a decision's `POST` ended, in the one line a person (on the terminal) or the admin (in
/// the watcher's log) reads; never a token.
package struct DecisionOutcome: Equatable, Sendable {
    package let line: String
    /// True when the authenticator took the decision (approved or denied).
    package let decided: Bool

    package init(_ result: Result<DecisionAnswer, ApprovalFailure>, _ shown: PendingApproval) {
        let (host, user, service) = (
            TerminalText.escaped(shown.host), shown.user, TerminalText.escaped(shown.service)
        )
        switch result {
        case let .failure(failure):
            (line, decided) = (failure.message, false)
        case .success(.approved):
            (line, decided) = ("approved: \(host) may log \(user) in to \(service)", true)
        case .success(.denied):
            line =
                "denied: \(host) may not log \(user) in to \(service); \(user)'s requests are muted "
                + "for the authenticator's approval-mute (20 minutes by default)"
            decided = true
        case let .success(.closed(status)):
            (line, decided) = ("not decided: the request is no longer pending (\(status))", false)
        case let .success(.refused(status, reason)):
            var text = "refused by the authenticator: \(reason) (\(status))"
            if ["expired", "iat_in_future", "not_yet_valid"].contains(reason) {
                text += "; check this computer's clock (timedatectl set-ntp true)"
            }
            (line, decided) = (text, false)
        }
    }
}

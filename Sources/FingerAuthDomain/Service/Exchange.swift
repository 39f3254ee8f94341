/// What the service does next for a request: give its outcome, or have items written
/// (through the group commit) and go on with their outcomes. An operation is a chain of
/// steps, so that the transport can park a request while its write commits instead of
/// blocking a thread on it (`HTTPServer` suspends the connection);
/// `AuthenticatorService.settle` runs the same chain synchronously.
package enum Step {
    case outcome(Outcome)
    /// The outcome, given after `AuthenticatorService.tarpit` with the request parked
    /// meanwhile (an address past its limit); at once where nothing is parked.
    case outcomeAfterPause(Outcome)
    case write([WriteItem], (Result<[WriteOutcome], StoreError>) -> Step)
    /// A long poll: the request is parked until `key` changes from `version`
    /// (`WaitRoom`) or `seconds` pass, then `then` gives the next step (it reads again
    /// what it answers with). Where nothing can be parked, `then` runs at once.
    case await(WaitKey, version: UInt64, seconds: Double, then: () -> Step)
}

/// What one request did, as the service saw it: the facts its log line carries besides the
/// transport's own (method, path, status, time).
package struct RequestFacts: Sendable {
    /// How it ended; nil (`-`) for a request that writes no audit row.
    package var outcome: AuditOutcome?
    package var reason: AuditReason?
    /// The verified user.
    package var sub: String?
    /// The user an unverified token only named.
    package var claimed: String?
    package var kid: String?
    package var jti: String?
    /// No line of its own: a refusal counted together with others (one line per address
    /// and window says so instead).
    package var quiet = false

    package init(
        outcome: AuditOutcome? = nil, reason: AuditReason? = nil, sub: String? = nil, kid: String? = nil,
        jti: String? = nil
    ) {
        self.outcome = outcome
        self.reason = reason
        self.sub = sub
        self.kid = kid
        self.jti = jti
    }
}

/// One request on its way through the service: what its log line and /metrics will say.
/// Its steps run one after another, never at once, so it needs no lock.
///
/// `@unchecked Sendable`: a request's steps may run on different threads (a libmicrohttpd
/// thread, then the writer's), but one after another, each handed over through a lock.
package final class Exchange: @unchecked Sendable {
    /// What the service learnt of the request.
    package internal(set) var facts = RequestFacts()
    /// The operation's name in /metrics' labels, the transport's choice.
    let route: String
    let address: String

    init(address: String, route: String) {
        self.route = route
        self.address = address
    }
}

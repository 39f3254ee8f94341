import FingerAuthCore

/// The central policy at the two places it decides: a verified login token before its
/// write transaction, and a registration once its proof verified. A refusal is
/// `policyDenied` with the rule and an audit row naming it; a policy that cannot be read is
/// `unavailable`, never an accept.
extension AuthenticatorService {
    /// What the policy says about `request`: nil to go on, else the outcome (`event` gets
    /// its outcome, reason and rule).
    /// `snapshot`: the facts already read for this user and host (`LoginReads`); else they
    /// are read now.
    func policyRefusal(_ request: PolicyRequest, _ event: inout AuditEvent, snapshot: PolicySnapshot? = nil)
        -> Outcome?
    {
        let decision: PolicyDecision
        do {
            decision = try (snapshot ?? store.policySnapshot(user: request.user, host: request.host)).decide(request)
        } catch {
            log.message("policy unavailable: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .unavailable
        }
        guard !decision.allowed else { return nil }
        event.outcome = .deny
        event.reason = .code(.policyDenied)
        event.rule = decision.rule?.id
        return .policyDenied(rule: decision.rule?.id)
    }

    /// What the policy says about a user on the host of the host token, with `{"user": U}`
    /// (a registration) or `{"user": U, "service": S}` (a login with a software key) —
    /// asked by `fingerauth enroll` before it asks for a finger and by `fingerauth status`.
    /// `policyAllows` with the rule, `policyDenied` with the rule, `badCredential` for a bad
    /// host token, `malformed` for no valid user or service. Nothing is written but a wrong
    /// host token's count against the address, as on every operation: the request itself is
    /// decided (and audited) again when it comes.
    func policyCheck(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .policyCheck, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let answer = policyCheckAnswer(request, &event)
        guard answer == .badCredential(.hostToken) else { return .outcome(answer) }
        exchange.facts.outcome = .deny
        exchange.facts.reason = event.reason
        return countingFailure(answer, exchange)
    }

    private func policyCheckAnswer(_ request: ServiceRequest, _ event: inout AuditEvent) -> Outcome {
        let host: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return answer
        case let .host(name): host = name
        }
        guard case let .success(body) = Self.jsonBody(request), let user = body["user"]?.stringValue else {
            return .malformed(.request)
        }
        guard Names.isValidUser(user) else { return .malformed(.userName(user, field: "user")) }
        let service = body["service"]?.stringValue
        if let service, !ServiceName.isValid(service) {
            return .malformed(.request)
        }
        let stage: PolicyStage = service == nil ? .registration : .login
        do {
            let decision = try store.policySnapshot(user: user, host: host)
                .decide(PolicyRequest(stage: stage, user: user, host: host, service: service))
            guard decision.allowed else { return .policyDenied(rule: decision.rule?.id) }
            return .policyAllows(rule: decision.rule?.id)
        } catch {
            log.message("policy unavailable: \(error)")
            return .unavailable
        }
    }
}

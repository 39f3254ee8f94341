import FingerAuthCore

/// The central policy at the two places it decides: a verified login token before its
/// write transaction, and a registration once its proof verified. A refusal is 403
/// `{"error":"policy_denied","rule":N}` and an audit row naming the rule; a policy that
/// cannot be read is 503, never an accept.
extension AuthenticatorService {
    /// What the policy says about `request`: nil to go on, else the answer (`event` gets
    /// its outcome, reason and rule).
    /// `snapshot`: the facts already read for this user and host (`LoginReads`); else they
    /// are read now.
    func policyRefusal(_ request: PolicyRequest, _ event: inout AuditEvent, snapshot: PolicySnapshot? = nil)
        -> HTTPResponse?
    {
        let decision: PolicyDecision
        do {
            decision = try (snapshot ?? store.policySnapshot(user: request.user, host: request.host)).decide(request)
        } catch {
            log.message("policy unavailable: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .error(503, "unavailable")
        }
        guard !decision.allowed else { return nil }
        event.outcome = .deny
        event.reason = .code(.policyDenied)
        event.rule = decision.rule?.id
        return Self.policyDenied(decision.rule?.id)
    }

    static func policyDenied(_ rule: Int64?) -> HTTPResponse {
        var fields: [(String, JSONValue)] = [("error", .string("policy_denied"))]
        if let rule { fields.append(("rule", .integer(rule))) }
        return HTTPResponse(status: 403, json: .object(fields))
    }

    /// `POST /v1/policy/check` with a host token and `{"user": U}` (a registration) or
    /// `{"user": U, "service": S}` (a login with a software key): what the policy says about
    /// U on the token's host — asked by `fingerauth enroll` before it asks for a finger and
    /// by `fingerauth status`. 200 `{"allowed":true,"rule":N|null}`, 403 `policy_denied` with
    /// the rule, 401 bad host token, 400 no valid user or service (a user name the rule
    /// refuses: `invalid_request` with the reason). Nothing is written but a wrong host
    /// token's count against the address, as on every endpoint: the request itself is
    /// decided (and audited) again when it comes.
    func policyCheck(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .policyCheck, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let answer = policyCheckAnswer(request, &event)
        guard answer.status == 401 else { return .answer(answer) }
        exchange.summary.outcome = .deny
        exchange.summary.reason = event.reason
        return countingFailure(answer, exchange)
    }

    private func policyCheckAnswer(_ request: HTTPRequest, _ event: inout AuditEvent) -> HTTPResponse {
        let host: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return answer
        case let .host(name): host = name
        }
        guard case let .success(body) = Self.jsonBody(request), let user = body["user"]?.stringValue else {
            return .error(400, "invalid_request")
        }
        guard Names.isValidUser(user) else { return Names.invalidUser(user, field: "user") }
        let service = body["service"]?.stringValue
        if let service, service.isEmpty || service.utf8.count > 64 || !TokenVerifier.isPrintableASCII(service) {
            return .error(400, "invalid_request")
        }
        let stage: PolicyStage = service == nil ? .registration : .login
        do {
            let decision = try store.policySnapshot(user: user, host: host)
                .decide(PolicyRequest(stage: stage, user: user, host: host, service: service))
            guard decision.allowed else { return Self.policyDenied(decision.rule?.id) }
            return HTTPResponse(
                status: 200,
                json: .object([
                    ("allowed", .bool(true)),
                    ("rule", decision.rule.map { .integer($0.id) } ?? .null),
                ]))
        } catch {
            log.message("policy unavailable: \(error)")
            return .error(503, "unavailable")
        }
    }
}

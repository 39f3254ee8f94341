import FingerAuthCore
import FingerAuthStore

/// `POST /v1/login` and its TouchIDAuth-compatible alias `POST /login`: `{"jwt": "…"}`, a
/// login token (`typ` JWT) only. 200 `{"ok":true,"sub","kid","jti"}` once the jti is
/// durable; 401 `{"error":"invalid_token"}` for every token that did not verify with a
/// registered key; 401 with the precise reason for a verified one (expired, replayed,
/// key_revoked, …); 429 past a limit; 503 when the registry cannot answer.
extension AuthenticatorService {
    func login(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(event: "login", outcome: "deny", peer: LogText.clean(exchange.address), verified: false)
        switch Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return finish(event, failure.response, exchange)
        case let .success(body):
            guard body.objectValue != nil, let jwt = body["jwt"]?.stringValue else {
                event.reason = "invalid_request"
                return finish(event, .error(400, "invalid_request"), exchange)
            }
            return useToken(jwt, event: event, exchange) { [self] use in
                switch use {
                case let .answered(row, answer, written):
                    return finish(row, answer, exchange, written: written)
                case let .accepted(token, row):
                    let answer = HTTPResponse(status: 200, json: .object([
                        ("ok", .bool(true)),
                        ("sub", .string(token.identity.user)),
                        ("kid", .string(token.identity.kid)),
                        ("jti", .string(token.jti)),
                    ]))
                    return finish(row, answer, exchange, written: true)
                }
            }
        }
    }

    /// How a login-kind token ended at a token endpoint.
    enum TokenUse {
        /// Accepted and its jti used up (the audit row is written).
        case accepted(VerifiedToken, AuditEvent)
        /// Refused: the row to write (unless `written`) and the answer, already in the
        /// endpoint's own vocabulary (`invalid` for unverified ones).
        case answered(AuditEvent, HTTPResponse, written: Bool)
    }

    /// The login path shared by `/v1/login` and `/oauth2/token`: verify, then the user's
    /// limit (for a verified identity only), then the claim in the write transaction;
    /// `then` turns how it ended into the endpoint's answer. `invalid` is the endpoint's
    /// one answer for every unverified token; `refusal` turns a verified refusal into the
    /// endpoint's answer.
    func useToken(_ token: String, event start: AuditEvent, _ exchange: Exchange, effect: ClaimEffect = .none,
                  invalid: HTTPResponse = .error(401, "invalid_token"),
                  refusal: @escaping (Refusal) -> HTTPResponse = { .error(401, $0.rawValue) },
                  unavailable: HTTPResponse = .error(503, "unavailable"),
                  then: @escaping (TokenUse) -> Step) -> Step {
        var event = start
        let check = verifier.check(token, for: .login)
        let facts = check.facts
        event.kid = facts.kid
        event.jti = facts.jti
        switch check {
        case .unavailable:
            event.claimedUser = facts.sub
            event.outcome = "error"
            event.reason = Refusal.unavailable.rawValue
            return then(.answered(event, unavailable, written: false))
        case let .unverified(reason, _):
            event.claimedUser = facts.sub
            event.reason = reason.rawValue
            metrics.unverified()
            return then(.answered(event, invalid, written: false))
        case let .refused(reason, identity, _):
            event.verified = true
            event.user = identity.user
            event.host = identity.host
            event.kid = identity.kid
            if let limited = userLimited(identity.user, exchange.address, &event) { return then(limited) }
            event.reason = reason.rawValue
            return then(.answered(event, refusal(reason), written: false))
        case let .valid(verified, _):
            event.verified = true
            event.user = verified.identity.user
            event.host = verified.identity.host
            event.kid = verified.identity.kid
            event.jti = verified.jti
            if let limited = userLimited(verified.identity.user, exchange.address, &event) { return then(limited) }
            let claimed = event
            return claim(verified, event: claimed, effect: effect, allowed: [.active]) { outcome in
                var row = claimed
                switch outcome {
                case nil:
                    row.outcome = "error"
                    row.reason = Refusal.unavailable.rawValue
                    return then(.answered(row, unavailable, written: false))
                case .accepted?, .written?:
                    row.outcome = "accept"
                    row.reason = nil
                    return then(.accepted(verified, row))
                case let .refused(claimRefusal)?:
                    let reason = Refusal(claimRefusal)
                    row.reason = reason.rawValue
                    return then(.answered(row, refusal(reason), written: true))
                }
            }
        }
    }

    /// 429 for a verified user past their limit at this address (the row keeps its user).
    private func userLimited(_ user: String, _ address: String, _ event: inout AuditEvent) -> TokenUse? {
        let wait: Int64?
        do { wait = try userRetryAfter(user, at: address) } catch {
            log.message("rate limit counter unavailable: \(error)")
            event.outcome = "error"
            event.reason = "unavailable"
            return .answered(event, .error(503, "unavailable"), written: false)
        }
        guard let wait else { return nil }
        event.outcome = "deny"
        event.reason = "rate_limited"
        metrics.rateLimited(scope: "user")
        return .answered(event, Self.tooMany(wait), written: false)
    }
}

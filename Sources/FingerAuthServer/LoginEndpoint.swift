import FingerAuthCore
import FingerAuthStore

/// `POST /v1/login` and its TouchIDAuth-compatible alias `POST /login`: `{"jwt": "…"}`, a
/// login token (`typ` JWT) only. 200 `{"ok":true,"sub","kid","jti"}` once the jti is
/// durable; 401 `{"error":"invalid_token"}` for every token that did not verify with a
/// registered key; 401 with the precise reason for a verified one (expired, replayed,
/// key_revoked, …); 429 past a limit; 503 when the registry cannot answer.
extension AuthenticatorService {
    func login(_ request: HTTPRequest, _ address: String, _ summary: inout RequestSummary) -> HTTPResponse {
        var event = AuditEvent(event: "login", outcome: "deny", peer: LogText.clean(address), verified: false)
        switch Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return finish(event, failure.response, address: address, &summary, path: request.path)
        case let .success(body):
            guard body.objectValue != nil, let jwt = body["jwt"]?.stringValue else {
                event.reason = "invalid_request"
                return finish(event, .error(400, "invalid_request"), address: address, &summary, path: request.path)
            }
            switch useToken(jwt, event: event, address: address) {
            case let .answered(row, answer, written):
                return finish(row, answer, address: address, &summary, path: request.path, written: written)
            case let .accepted(token, row):
                let answer = HTTPResponse(status: 200, json: .object([
                    ("ok", .bool(true)),
                    ("sub", .string(token.identity.user)),
                    ("kid", .string(token.identity.kid)),
                    ("jti", .string(token.jti)),
                ]))
                return finish(row, answer, address: address, &summary, path: request.path, written: true)
            }
        }
    }

    /// How a login-kind token ended at a token endpoint.
    enum TokenUse {
        /// Accepted and its jti used up (the audit row is written).
        case accepted(VerifiedToken, AuditEvent)
        /// Refused: the row to write (unless `written`) and the answer, still in the
        /// endpoint's own vocabulary (`invalidToken` for unverified ones).
        case answered(AuditEvent, HTTPResponse, written: Bool)
    }

    /// The login path shared by `/v1/login` and `/oauth2/token`: verify, then the user's
    /// limit (for a verified identity only), then the claim in the write transaction.
    /// `invalid` is the endpoint's one answer for every unverified token; `refusal` turns a
    /// verified refusal into the endpoint's answer.
    func useToken(_ token: String, event start: AuditEvent, address: String, effect: ClaimEffect = .none,
                  invalid: HTTPResponse = .error(401, "invalid_token"),
                  refusal: (Refusal) -> HTTPResponse = { .error(401, $0.rawValue) },
                  unavailable: HTTPResponse = .error(503, "unavailable")) -> TokenUse {
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
            return .answered(event, unavailable, written: false)
        case let .unverified(reason, _):
            event.claimedUser = facts.sub
            event.reason = reason.rawValue
            metrics.unverified()
            return .answered(event, invalid, written: false)
        case let .refused(reason, identity, _):
            event.verified = true
            event.user = identity.user
            event.host = identity.host
            event.kid = identity.kid
            if let limited = userLimited(identity.user, address, &event) { return limited }
            event.reason = reason.rawValue
            return .answered(event, refusal(reason), written: false)
        case let .valid(verified, _):
            event.verified = true
            event.user = verified.identity.user
            event.host = verified.identity.host
            event.kid = verified.identity.kid
            event.jti = verified.jti
            if let limited = userLimited(verified.identity.user, address, &event) { return limited }
            switch claim(verified, event: event, effect: effect, allowed: [.active]) {
            case nil:
                event.outcome = "error"
                event.reason = Refusal.unavailable.rawValue
                return .answered(event, unavailable, written: false)
            case .accepted?, .written?:
                event.outcome = "accept"
                event.reason = nil
                return .accepted(verified, event)
            case let .refused(claimRefusal)?:
                let reason = Refusal(claimRefusal)
                event.reason = reason.rawValue
                return .answered(event, refusal(reason), written: true)
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

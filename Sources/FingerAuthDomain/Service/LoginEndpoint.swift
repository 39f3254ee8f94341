import FingerAuthCore

/// A login (`ServiceOperation.login`): `{"jwt": "…"}`, a login token (`typ` JWT) only.
/// `loggedIn` once the jti is durable; `unverifiedToken` for every token that did not
/// verify with a registered key; `tokenRefused` with the precise reason for a verified one
/// (expired, replayed, key_revoked, …); `tooMany` past a limit; `unavailable` when the
/// registry cannot answer. The helper's `stages` beside the token (`LoginStageReport`) go
/// on the audit row of a verified token only, and are dropped when malformed: they never
/// change the outcome. On PostgreSQL the
/// address's and the user's failure windows and the policy's facts are read in one statement
/// (`LoginReads`) before the token is verified: with the claim's write, two round trips.
/// Where a grant key is configured, the outcome also carries the grant the policy allows
/// (or none: the host drops the one it holds) and the keys hosts pin, see `OfflineEndpoints`.
extension AuthenticatorService {
    func login(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(event: .login, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        // The address's limit comes before any parsing, as on every endpoint; only where the
        // limits' reads go with the policy's (PostgreSQL) is a body the size of a login parsed
        // first, to key them.
        var parsed: Result<JSONValue, BodyFailure>?
        var reads: LoginReads?
        if store.sharesFailureCounts && request.body.count <= verifier.policy.maxTokenBytes + 1024 {
            let body = Self.jsonBody(request)
            parsed = body
            if case let .success(json) = body, let stop = readForLogin(json["jwt"]?.stringValue, exchange, into: &reads)
            {
                return stop
            }
        }
        if let limited = limited(exchange, reads: reads) { return limited }
        switch parsed ?? Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return finish(event, failure.outcome, exchange)
        case let .success(body):
            guard body.objectValue != nil, let jwt = body["jwt"]?.stringValue else {
                event.reason = .code(.invalidRequest)
                return finish(event, .malformed(.request), exchange)
            }
            event.stages = body["stages"].flatMap(LoginStageReport.init(json:))
            return useToken(jwt, event: event, exchange, reads: reads, issuesGrant: true) { [self] use in
                switch use {
                case let .answered(row, answer, written):
                    return finish(row, answer, exchange, written: written)
                case let .accepted(token, row, issued):
                    let accepted = LoginAccepted(
                        user: token.identity.user, kid: token.identity.kid, jti: token.jti,
                        offline: offlineAllowance(issued))
                    return finish(row, .loggedIn(accepted), exchange, written: true)
                }
            }
        }
    }
}

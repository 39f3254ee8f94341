#if canImport(Glibc)
import Glibc
#endif
import FingerAuthCore

/// The authenticator's endpoints as plain Swift: a request in, an answer out, with the
/// audit row written before the answer is returned and one log line per request. The
/// HTTP adapter (`HTTPServer`) only moves bytes.
public final class AuthenticatorService: Sendable {
    /// Largest accepted request body, bytes; beyond it the answer is 413.
    public static let maxBodyBytes = 16 * 1024

    let store: any AuthStorage
    let verifier: TokenVerifier
    let clock: any AuthClock
    let log: RequestLog
    let settings: ServiceSettings
    /// Counters for /metrics.
    public let metrics = Metrics()
    let users: FailureLimiter
    let addresses: FailureLimiter

    /// A service over `store` that verifies with `policy`, reads `clock` and logs to `log`.
    public init(store: any AuthStorage, policy: VerifierPolicy, settings: ServiceSettings = ServiceSettings(),
                clock: any AuthClock = WallClock(), log: RequestLog = RequestLog()) {
        self.store = store
        self.clock = clock
        self.log = log
        self.settings = settings
        self.users = FailureLimiter(settings.userLimit, store: store, scope: "user:")
        self.addresses = FailureLimiter(settings.addressLimit, store: store, scope: "address:")
        self.verifier = TokenVerifier(policy: policy, clock: clock, keys: store, replay: store)
    }

    /// Routes `request` and answers it. Unknown paths get 404, known paths with another
    /// method 405 (with `Allow`).
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let started = Self.monotonicSeconds()
        var summary = RequestSummary(method: request.method, path: request.path, status: 500, peer: request.peer)
        let response = route(request, &summary)
        let seconds = max(0, Self.monotonicSeconds() - started)
        summary.status = response.status
        summary.milliseconds = Int(seconds * 1000)
        log.record(summary)
        metrics.request(path: request.path, status: response.status, seconds: seconds)
        return response
    }

    private func route(_ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        let path = request.path
        switch path {
        case "/healthz":
            guard request.method == "GET" || request.method == "HEAD" else { return Self.notAllowed("GET, HEAD") }
            switch store.health() {
            case .available:
                return HTTPResponse(status: 200, json: .object([("ok", .bool(true)), ("store", .string("available"))]))
            case let .unavailable(reason):
                summary.reason = "store_unavailable"
                log.message("health: store unavailable: \(reason)")
                return HTTPResponse(status: 503, json: .object([("ok", .bool(false)), ("store", .string("unavailable"))]))
            }
        case "/metrics":
            guard request.method == "GET" else { return Self.notAllowed("GET") }
            let keys = try? store.keyCounts()
            return HTTPResponse(status: 200, text: metrics.render(keys: keys),
                                contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/v1/login", "/login":
            guard request.method == "POST" else { return Self.notAllowed("POST") }
            return limited(request, "login", &summary) ?? login(request, &summary)
        case "/oauth2/token":
            guard request.method == "POST" else { return Self.notAllowed("POST") }
            return limited(request, "oauth_token", &summary) ?? tokenGrant(request, &summary)
        case "/v1/keys", "/pubkey":
            guard request.method == "POST" else { return Self.notAllowed("POST") }
            return limited(request, "register", &summary) ?? register(request, &summary)
        default:
            let prefix = "/v1/keys/"
            if path.hasPrefix(prefix) {
                let kid = String(path.dropFirst(prefix.count))
                switch request.method {
                case "DELETE": return limited(request, "revoke", &summary) ?? revoke(kid: kid, request, &summary)
                case "GET": return keyStatus(kid: kid, request)
                default: return Self.notAllowed("GET, DELETE")
                }
            }
            return .error(404, "not_found")
        }
    }

    static func notAllowed(_ allow: String) -> HTTPResponse {
        .error(405, "method_not_allowed", headers: [("Allow", allow)])
    }

    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    // MARK: - Rate limits

    /// Seconds the user a login token claims must wait, or nil when it may try; throws when
    /// the shared counter cannot be read (the caller answers 503).
    func userRetryAfter(_ user: String?) throws(StoreError) -> Int64? {
        guard let user else { return nil }
        return try users.checkedRetryAfter(user, now: clock.now())
    }

    /// The per-user failure limit for the user a token claims: nil to go on verifying, or
    /// the answer — `unavailable` when the counter cannot be read (fail closed), else 429.
    func userLimitAnswer(_ token: String, _ event: inout AuditEvent, unavailable: HTTPResponse) -> HTTPResponse? {
        let claimed = verifier.peek(token)
        let wait: Int64?
        do throws(StoreError) {
            wait = try userRetryAfter(claimed.sub)
        } catch {
            event.user = claimed.sub
            counterUnavailable(&event, error)
            return unavailable
        }
        guard let wait else { return nil }
        event.user = claimed.sub
        event.kid = claimed.kid
        event.jti = claimed.jti
        return rateLimitedAnswer(&event, scope: "user", wait: wait)
    }

    /// Marks `event` as failed on the store (the rate-limit counter could not be read).
    func counterUnavailable(_ event: inout AuditEvent, _ error: StoreError) {
        log.message("rate limit counter unavailable: \(error)")
        event.outcome = "error"
        event.reason = "unavailable"
    }

    /// Marks `event` rate-limited, counts it, and returns the 429 answer with `Retry-After`.
    func rateLimitedAnswer(_ event: inout AuditEvent, scope: String, wait: Int64) -> HTTPResponse {
        event.outcome = "deny"
        event.reason = "rate_limited"
        metrics.rateLimited(scope: scope)
        return .error(429, "rate_limited", headers: [("Retry-After", String(wait))])
    }

    /// The 429 answer (audited) when the client's address is over its failure limit.
    private func limited(_ request: HTTPRequest, _ eventName: String, _ summary: inout RequestSummary) -> HTTPResponse? {
        var event = AuditEvent(event: eventName, outcome: "deny", peer: LogText.clean(request.peer))
        let answer: HTTPResponse
        do throws(StoreError) {
            guard let wait = try addresses.checkedRetryAfter(request.peer, now: clock.now()) else { return nil }
            answer = rateLimitedAnswer(&event, scope: "address", wait: wait)
        } catch {
            counterUnavailable(&event, error)
            answer = .error(503, "unavailable")
        }
        return finish(event, answer, &summary, path: request.path)
    }

    // MARK: - Login

    private func login(_ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        var event = AuditEvent(event: "login", outcome: "deny", peer: LogText.clean(request.peer))
        let answer: HTTPResponse
        switch Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            answer = failure.response
        case let .success(body):
            if body.objectValue == nil {
                event.reason = "invalid_request"
                answer = .error(400, "invalid_request")
            } else if let jwt = body["jwt"]?.stringValue {
                if let refused = userLimitAnswer(jwt, &event, unavailable: .error(503, "unavailable")) {
                    return finish(event, refused, &summary, path: request.path)
                }
                let result = verifier.verifyLogin(jwt)
                event.user = result.facts.sub
                event.host = result.facts.iss
                event.kid = result.facts.kid
                event.jti = result.facts.jti
                if let refusal = result.refusal {
                    event.reason = refusal.rawValue
                    event.outcome = refusal == .unavailable ? "error" : "deny"
                    answer = .error(refusal == .unavailable ? 503 : 401, refusal.rawValue)
                } else {
                    event.outcome = "accept"
                    answer = HTTPResponse(status: 200, json: .object([
                        ("ok", .bool(true)),
                        ("sub", .string(result.facts.sub ?? "")),
                        ("kid", .string(result.facts.kid ?? "")),
                        ("jti", .string(result.facts.jti ?? "")),
                    ]))
                }
            } else {
                event.reason = "invalid_request"
                answer = .error(400, "invalid_request")
            }
        }
        return finish(event, answer, &summary, path: request.path)
    }

    /// Writes the audit row, then fills the log summary, counts the outcome for /metrics and
    /// a refusal for the rate limits; an audit failure turns any answer into 503 so that
    /// nothing is accepted unrecorded.
    func finish(_ event: AuditEvent, _ answer: HTTPResponse, _ summary: inout RequestSummary,
                path: String) -> HTTPResponse {
        summary.outcome = event.outcome
        summary.reason = event.reason
        summary.sub = event.user
        summary.kid = event.kid
        summary.jti = event.jti
        do {
            try store.audit(event, now: clock.now())
        } catch {
            log.message("audit write failed: \(error)")
            summary.outcome = "error"
            summary.reason = "audit_failed"
            return .error(503, "unavailable")
        }
        metrics.audited(event, path: path)
        if event.outcome == "deny" && event.reason != "rate_limited" {
            let now = clock.now()
            do throws(StoreError) {
                if let peer = event.peer { try addresses.checkedRecordFailure(peer, now: now) }
                if event.event == "login" || event.event == "oauth_token", let user = event.user {
                    try users.checkedRecordFailure(user, now: now)
                }
            } catch {
                log.message("rate limit counter unavailable: \(error)")
                summary.outcome = "error"
                summary.reason = "unavailable"
                return .error(503, "unavailable")
            }
        }
        return answer
    }

    // MARK: - Bodies

    /// Why a body was not usable JSON, with the answer for it.
    struct BodyFailure: Error {
        let code: String
        let response: HTTPResponse
    }

    /// The body parsed as strict JSON, or the 413/415/400 answer.
    static func jsonBody(_ request: HTTPRequest) -> Result<JSONValue, BodyFailure> {
        guard !request.bodyTooLarge, request.body.count <= maxBodyBytes else {
            return .failure(BodyFailure(code: "body_too_large", response: .error(413, "body_too_large")))
        }
        guard isJSONContentType(request.contentType) else {
            return .failure(BodyFailure(code: "unsupported_media_type", response: .error(415, "unsupported_media_type")))
        }
        do {
            return .success(try JSONParser(maxBytes: maxBodyBytes, maxDepth: 8).parse(request.body))
        } catch {
            return .failure(BodyFailure(code: "invalid_json", response: .error(400, "invalid_json")))
        }
    }

    /// `application/json`, optionally with parameters (`; charset=utf-8`), any case.
    static func isJSONContentType(_ value: String?) -> Bool {
        guard let value else { return false }
        let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingSpaces.lowercased() == "application/json"
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}

import FingerAuthCore

/// The authenticator's endpoints as plain Swift: a request in, an answer out, with the
/// audit row written before the answer is returned and one log line per request. The
/// HTTP adapter (`HTTPServer`) only moves bytes.
public final class AuthenticatorService: Sendable {
    /// Largest accepted request body, bytes; beyond it the answer is 413.
    public static let maxBodyBytes = 16 * 1024

    let store: AuthStore
    let verifier: TokenVerifier
    let clock: any AuthClock
    let log: RequestLog

    /// A service over `store` that verifies with `policy`, reads `clock` and logs to `log`.
    public init(store: AuthStore, policy: VerifierPolicy, clock: any AuthClock = WallClock(),
                log: RequestLog = RequestLog()) {
        self.store = store
        self.clock = clock
        self.log = log
        self.verifier = TokenVerifier(policy: policy, clock: clock, keys: store, replay: store)
    }

    /// Routes `request` and answers it. Unknown paths get 404, known paths with another
    /// method 405 (with `Allow`).
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        var summary = RequestSummary(method: request.method, path: request.path, status: 500, peer: request.peer)
        let response = route(request, &summary)
        summary.status = response.status
        log.record(summary)
        return response
    }

    private func route(_ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        let path = request.path
        switch path {
        case "/healthz":
            guard request.method == "GET" || request.method == "HEAD" else { return Self.notAllowed("GET, HEAD") }
            return HTTPResponse(status: 200, json: .object([("ok", .bool(true))]))
        case "/v1/login", "/login":
            guard request.method == "POST" else { return Self.notAllowed("POST") }
            return login(request, &summary)
        case "/v1/keys":
            guard request.method == "POST" else { return Self.notAllowed("POST") }
            return register(request, &summary)
        default:
            let prefix = "/v1/keys/"
            if path.hasPrefix(prefix) {
                guard request.method == "DELETE" else { return Self.notAllowed("DELETE") }
                return revoke(kid: String(path.dropFirst(prefix.count)), request, &summary)
            }
            return .error(404, "not_found")
        }
    }

    static func notAllowed(_ allow: String) -> HTTPResponse {
        .error(405, "method_not_allowed", headers: [("Allow", allow)])
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
        return finish(event, answer, &summary)
    }

    /// Writes the audit row, then fills the log summary; an audit failure turns any answer
    /// into 503 so that nothing is accepted unrecorded.
    func finish(_ event: AuditEvent, _ answer: HTTPResponse, _ summary: inout RequestSummary) -> HTTPResponse {
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

import FingerAuthCore
import FingerAuthDomain
import FingerAuthWeb

/// The login API over HTTP: which operation a method and path ask for (`route`), what the
/// service reads of the request (`serviceRequest`), the answer to its outcome
/// (`AnswerMapping`), and per request one log line and its counts for /metrics (`complete`).
/// `HTTPServer` runs the service's steps in between; `handle` runs them on the caller's thread.
package struct LoginAPI: Sendable {
    package let service: AuthenticatorService
    let log: any RequestLines

    /// The API of `service`, its request lines to `log`.
    package init(service: AuthenticatorService, log: any RequestLines) {
        self.service = service
        self.log = log
    }

    /// What a request asks for: an operation of the service, or an answer at once (no such
    /// path, or a method the path does not allow).
    package enum Route: Sendable, Equatable {
        case operation(ServiceOperation)
        case answer(HTTPResponse)
    }

    /// The route of `method` `path`. Unknown paths get 404, known paths with another method
    /// 405 (with `Allow`). A `GET` of the login path is the login helper's warm-up (it opens
    /// the connection while the finger is awaited): answered here, before any limit, audit
    /// row or failure count.
    package static func route(method: String, path: String) -> Route {
        func only(_ allowed: String, _ operation: ServiceOperation) -> Route {
            method == allowed ? .operation(operation) : .answer(AnswerMapping.notAllowed(allowed))
        }
        switch path {
        case "/healthz":
            return method == "GET" || method == "HEAD"
                ? .operation(.health) : .answer(AnswerMapping.notAllowed("GET, HEAD"))
        case "/metrics": return only("GET", .metrics)
        case "/v1/login", "/login": return only("POST", .login)
        case "/oauth2/token": return only("POST", .accessToken)
        case "/oauth2/introspect": return only("POST", .introspect)
        case "/v1/keys", "/pubkey": return only("POST", .register)
        case "/v1/keys/challenge": return only("POST", .attestationChallenge)
        case "/v1/policy/check": return only("POST", .policyCheck)
        case "/v1/offline-sync", "/offline-sync": return only("POST", .offlineSync)
        case "/v1/approvals": return only("POST", .requestApproval)
        case "/v1/approvals/watch": return only("GET", .watchApprovals)
        case "/v1/hosts/keys": return only("POST", .registerHostKey)
        default:
            if let route = approvalRoute(method: method, path: path) { return route }
            let prefix = "/v1/keys/"
            guard path.hasPrefix(prefix) else { return .answer(AnswerMapping.notFound) }
            let kid = String(path.dropFirst(prefix.count))
            switch method {
            case "DELETE": return .operation(.revoke(kid: kid))
            case "GET": return .operation(.keyStatus(kid: kid))
            default: return .answer(AnswerMapping.notAllowed("GET, DELETE"))
            }
        }
    }

    /// The login helper's warm-up: a `GET` of the login path, which opens the connection
    /// while the finger is awaited and is answered 405 by design. Not logged (a line
    /// `status=405` for every login read as an error); /metrics still counts it.
    package static func isWarmUp(method: String, path: String) -> Bool {
        method == "GET" && (path == "/v1/login" || path == "/login")
    }

    /// The fixed name of `path` in /metrics' labels.
    package static func label(_ path: String) -> String {
        switch path {
        case "/v1/login", "/login", "/oauth2/token", "/oauth2/introspect", "/v1/keys", "/pubkey", "/healthz",
            "/metrics":
            return path
        case "/v1/approvals", "/v1/approvals/watch", "/v1/hosts/keys": return path
        default:
            if path.hasPrefix("/v1/approvals/") {
                return path.hasSuffix("/decision") ? "/v1/approvals/{id}/decision" : "/v1/approvals/{id}"
            }
            return path.hasPrefix("/v1/keys/") ? "/v1/keys/{kid}" : "other"
        }
    }

    /// What the service reads of `request`: the client, the bearer credential, the body and
    /// how it is encoded.
    package static func serviceRequest(_ request: HTTPRequest) -> ServiceRequest {
        let media: BodyMedia
        if let type = request.contentType, MediaType.is(type, "application/json") {
            media = .json
        } else if let type = request.contentType, MediaType.is(type, "application/x-www-form-urlencoded") {
            media = .form
        } else {
            media = .other
        }
        var serviceRequest = ServiceRequest(
            peer: request.peer, credential: bearer(request.authorization), media: media, body: request.body,
            bodyTooLarge: request.bodyTooLarge)
        serviceRequest.query = request.query
        return serviceRequest
    }

    /// The query parameters the login API reads: a long poll's `wait`, a watch's `have`.
    package static let queryNames = ["wait", "have"]

    /// `GET`/`DELETE /v1/approvals/<id>` and `POST /v1/approvals/<id>/decision`; nil for any
    /// other path. An id is 22 base64url characters; anything else is no approval (404).
    static func approvalRoute(method: String, path: String) -> Route? {
        let prefix = "/v1/approvals/"
        guard path.hasPrefix(prefix) else { return nil }
        var rest = Substring(path.dropFirst(prefix.count))
        let decision = rest.hasSuffix("/decision")
        if decision { rest = rest.dropLast("/decision".count) }
        guard rest.utf8.count == 22, rest.utf8.allSatisfy(Base64URL.isAlphabet) else {
            return .answer(AnswerMapping.notFound)
        }
        let id = String(rest)
        if decision {
            return method == "POST" ? .operation(.decideApproval(id: id)) : .answer(AnswerMapping.notAllowed("POST"))
        }
        switch method {
        case "GET": return .operation(.approvalState(id: id))
        case "DELETE": return .operation(.withdrawApproval(id: id))
        default: return .answer(AnswerMapping.notAllowed("GET, DELETE"))
        }
    }

    /// The credential of `Authorization: Bearer <credential>`, or nil.
    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = String(parts[1].trimmingSpaces)
        return credential.isEmpty ? nil : credential
    }

    /// Answers `request`, the service's writes committed on this thread (tests, and the rare
    /// request the server does not park).
    package func handle(_ request: HTTPRequest) -> HTTPResponse {
        let line = RequestLine(request)
        switch Self.route(method: request.method, path: request.path) {
        case let .answer(response):
            var facts = RequestFacts()
            facts.quiet = Self.isWarmUp(method: request.method, path: request.path)
            complete(line, facts, response)
            return response
        case let .operation(operation):
            let (exchange, outcome) = service.perform(operation, Self.serviceRequest(request), route: line.label)
            let response = AnswerMapping.answer(outcome, of: operation)
            complete(line, exchange.facts, response)
            return response
        }
    }

    /// The request is answered: its log line (unless the service made it quiet) and its counts.
    package func complete(_ line: RequestLine, _ facts: RequestFacts, _ response: HTTPResponse) {
        let seconds = line.elapsedSeconds
        var summary = RequestSummary(method: line.method, path: line.path, status: response.status, peer: line.peer)
        summary.facts = facts
        summary.milliseconds = Int(seconds * 1000)
        if !facts.quiet { log.record(summary) }
        service.metrics.request(labels: "route=\"\(line.label)\",status=\"\(response.status)\"", seconds: seconds)
    }
}

/// What the transport keeps of a request for its log line: method, path, client, its label
/// in /metrics and when it began.
package struct RequestLine: Sendable {
    package let method: String
    package let path: String
    package let peer: String
    package let label: String
    let started = SuspendingClock.now

    package init(_ request: HTTPRequest) {
        method = request.method
        path = request.path
        peer = request.peer
        label = LoginAPI.label(request.path)
    }

    /// Seconds since the request began (CLOCK_MONOTONIC).
    var elapsedSeconds: Double {
        let (seconds, attoseconds) = started.duration(to: SuspendingClock.now).components
        return max(0, Double(seconds) + Double(attoseconds) * 1e-18)
    }
}

/// What a listener serves.
package enum ListenerSurface: Sendable {
    /// The login API (`/v1/login`, `/v1/keys`, `/oauth2/…`, `/healthz`, `/metrics`).
    case login
    /// The admin console (`admin-listen`): HTML pages, never the login API.
    case console(any ConsoleSurface)
}

import FingerAuthCore
import FingerAuthKeyFormats

/// The authenticator's endpoints as plain Swift: a request in, an answer out, with the
/// audit row durable before the answer is returned and one log line per request. The
/// HTTP transport (`HTTPServer`, FingerAuthTransport) only moves bytes.
///
/// Every write of the request path goes through `writer` (group commit): a verified
/// token's key check, jti claim and audit row in one transaction, shared with the other
/// requests of the moment. Refusals count against the client's address; against a user
/// only when the token's signature verified with that user's key. Addresses past their
/// limit are answered 429 and counted together (`refusals`), not written one row each.
public final class AuthenticatorService: Sendable {
    /// Largest accepted request body, bytes; beyond it the answer is 413.
    public static let maxBodyBytes = 16 * 1024
    /// How long the HTTP layer holds back a 429 to an address past its limit, its
    /// connection parked: a client that floods on keep-alive connections gets at most one
    /// answer per connection and pause (64 connections: 6,400 a second, not 40,000), and
    /// the pause costs the server no thread and no CPU.
    public static let tarpit = 0.010
    /// An address may make this many times a key's offline uploads per window.
    public static let uploadAddressFactor = 8

    let store: any ServiceRegistry
    let writer: any Committer
    let verifier: TokenVerifier
    let crypto: any AuthenticatorCrypto
    let clock: any AuthClock
    /// Where the request lines and messages go.
    public let log: any ServiceLog
    let settings: ServiceSettings
    /// Counters for /metrics.
    public let metrics: Metrics
    let users: FailureLimiter
    let addresses: FailureLimiter
    /// Registrations (new keys and the same key again) per host and window.
    let registrations: FailureLimiter
    /// Offline uploads per device key, and per address.
    let keyUploads: FailureLimiter
    let addressUploads: FailureLimiter
    /// Refused requests of addresses past their limit, counted together; the group
    /// commit drains it into `refusals` rows about once a second.
    public let refusals: RefusalCounter
    /// The admin console, when `admin-listen` is set; listeners of surface `.console` serve it.
    public let console: (any ConsoleSurface)?

    /// A service over `store` that writes through `writer`, verifies with `policy` and
    /// `crypto`, reads `clock` and logs to `log`. `refusals` must be the counter `writer`
    /// drains (`RefusalCounter.drain`); the console counts its refusals there too.
    public init(
        store: any ServiceRegistry, writer: any Committer, crypto: any AuthenticatorCrypto, policy: VerifierPolicy,
        settings: ServiceSettings = ServiceSettings(), clock: any AuthClock, log: any ServiceLog,
        refusals: RefusalCounter, console: (any ConsoleSurface)? = nil
    ) {
        self.store = store
        self.writer = writer
        self.crypto = crypto
        self.clock = clock
        self.log = log
        self.settings = settings
        self.refusals = refusals
        self.console = console
        self.metrics = Metrics()
        self.users = FailureLimiter(settings.userLimit, store: store, scope: "user:")
        self.addresses = FailureLimiter(settings.addressLimit, store: store, scope: "address:")
        self.registrations = FailureLimiter(settings.hostRegistrations, store: store, scope: "registration:")
        self.keyUploads = FailureLimiter(settings.offlineUploads, store: store, scope: "offline-key:")
        let perAddress = RateLimit(
            failures: settings.offlineUploads.failures * Self.uploadAddressFactor,
            window: settings.offlineUploads.window)
        self.addressUploads = FailureLimiter(perAddress, store: store, scope: "offline-address:")
        self.verifier = TokenVerifier(policy: policy, clock: clock, keys: KeyCache(store, crypto: crypto))
    }

    /// Starts the group commit's writer thread.
    public func startWriter() { writer.start() }

    /// Writes what is still queued and stops the writer thread.
    public func stopWriter() { writer.stop() }

    /// Routes `request` and answers it, its writes committed on this thread (tests, and
    /// the rare request the HTTP layer does not park). Unknown paths get 404, known paths
    /// with another method 405 (with `Allow`).
    public func handle(_ request: HTTPRequest, surface: ListenerSurface = .login) -> HTTPResponse {
        let (exchange, first) = start(request, surface: surface)
        var step = first
        while case let .write(items, next) = step {
            do throws(StoreError) {
                step = next(.success(try writer.write(items)))
            } catch {
                step = next(.failure(error))
            }
        }
        let response: HTTPResponse
        switch step {
        case let .answer(answer), let .answerAfterPause(answer): response = answer
        case .write: return .error(500, "internal")
        }
        complete(exchange, response)
        return response
    }

    /// The first step of `request` (routing, limits, parsing, verification: everything
    /// before its first write) and the exchange that carries it to its answer.
    public func start(_ request: HTTPRequest, surface: ListenerSurface = .login) -> (Exchange, Step) {
        let address = request.peer
        let exchange = Exchange(request: request, address: address)
        switch surface {
        case .login: return (exchange, route(request, exchange))
        case .console:
            guard let console else { return (exchange, .answer(.error(404, "not_found"))) }
            return (exchange, .answer(console.answer(request, address: address)))
        }
    }

    /// Has `items` written in the next batch and calls `completion` (on the writer's
    /// thread) once that batch is durable or failed: the HTTP layer's way to wait.
    public func submit(
        _ items: [WriteItem], completion: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void
    ) {
        writer.submit(items, completion: completion)
    }

    /// Commits `items` on this thread when the writer is idle (`GroupCommit.commitAlone`);
    /// nil when it is busy and the items must be submitted.
    public func commitAlone(_ items: [WriteItem]) -> Result<[WriteOutcome], StoreError>? {
        writer.commitAlone(items)
    }

    /// The request is answered: its log line and its counts.
    public func complete(_ exchange: Exchange, _ response: HTTPResponse) {
        let seconds = exchange.elapsedSeconds
        exchange.summary.status = response.status
        exchange.summary.milliseconds = Int(seconds * 1000)
        if !exchange.summary.quiet { log.record(exchange.summary) }
        metrics.request(path: exchange.path, status: response.status, seconds: seconds)
    }

    private func route(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        let path = request.path
        switch path {
        case "/healthz":
            guard request.method == "GET" || request.method == "HEAD" else {
                return .answer(Self.notAllowed("GET, HEAD"))
            }
            return .answer(health(exchange))
        case "/metrics":
            guard request.method == "GET" else { return .answer(Self.notAllowed("GET")) }
            return limited(exchange) ?? metricsAnswer(request, exchange)
        case "/v1/login", "/login":
            // A GET here is the login helper's warm-up (it opens the connection while the
            // finger is awaited): answered before any limit, audit row or failure count.
            guard request.method == "POST" else { return .answer(Self.notAllowed("POST")) }
            return login(request, exchange) // its address limit with its other reads
        case "/oauth2/token":
            guard request.method == "POST" else { return .answer(Self.notAllowed("POST")) }
            return limited(exchange) ?? tokenGrant(request, exchange)
        case "/oauth2/introspect":
            guard request.method == "POST" else { return .answer(Self.notAllowed("POST")) }
            return limited(exchange) ?? introspect(request, exchange)
        case "/v1/keys", "/pubkey":
            guard request.method == "POST" else { return .answer(Self.notAllowed("POST")) }
            return limited(exchange) ?? register(request, exchange)
        case "/v1/keys/challenge":
            guard request.method == "POST" else { return .answer(Self.notAllowed("POST")) }
            return limited(exchange) ?? attestationChallenge(request, exchange)
        case "/v1/policy/check":
            guard request.method == "POST" else { return .answer(Self.notAllowed("POST")) }
            return limited(exchange) ?? policyCheck(request, exchange)
        case "/v1/offline-sync", "/offline-sync":
            guard request.method == "POST" else { return .answer(Self.notAllowed("POST")) }
            return limited(exchange) ?? offlineSync(request, exchange)
        default:
            let prefix = "/v1/keys/"
            if path.hasPrefix(prefix) {
                let kid = String(path.dropFirst(prefix.count))
                switch request.method {
                case "DELETE": return limited(exchange) ?? revoke(kid: kid, request, exchange)
                case "GET": return limited(exchange) ?? keyStatus(kid: kid, request, exchange)
                default: return .answer(Self.notAllowed("GET, DELETE"))
                }
            }
            return .answer(.error(404, "not_found"))
        }
    }

    private func health(_ exchange: Exchange) -> HTTPResponse {
        switch store.health() {
        case .available:
            return HTTPResponse(status: 200, json: .object([("ok", .bool(true)), ("store", .string("available"))]))
        case let .unavailable(reason):
            exchange.summary.reason = .code(.storeUnavailable)
            log.message("health: store unavailable: \(reason)")
            return HTTPResponse(status: 503, json: .object([("ok", .bool(false)), ("store", .string("unavailable"))]))
        }
    }

    static func notAllowed(_ allow: String) -> HTTPResponse {
        .error(405, "method_not_allowed", headers: [("Allow", allow)])
    }

    // MARK: - Limits

    /// The 429 answer when the exchange's address is past its failure limit: counted
    /// together with the address's other refusals of this window (one `refusals` row), not
    /// written alone. A store that cannot say answers 503 (fail closed).
    func limited(_ exchange: Exchange, reads: LoginReads? = nil) -> Step? {
        let address = exchange.address
        let wait: Int64?
        do { wait = try addresses.retryAfter(address, now: clock.now(), reads: reads) } catch {
            log.message("rate limit counter unavailable: \(error)")
            exchange.summary.outcome = .error
            exchange.summary.reason = .token(.unavailable)
            return .answer(.error(503, "unavailable"))
        }
        guard let wait else { return nil }
        if refusals.add(peer: address, reason: .rateLimited, now: clock.now()) {
            log.message(
                "\(address) is past its failure limit: its requests are answered 429 for \(wait) s, "
                    + "counted in one audit row (event refusals) and not logged one by one")
        } else {
            exchange.summary.quiet = true
        }
        exchange.summary.outcome = .deny
        exchange.summary.reason = .code(.rateLimited)
        metrics.rateLimited(scope: "address")
        return .answerAfterPause(Self.tooMany(wait))
    }

    static func tooMany(_ wait: Int64) -> HTTPResponse {
        .error(429, "rate_limited", headers: [("Retry-After", String(wait))])
    }

    /// The per-user limit for `user` at `address` (a verified identity): seconds to wait, or
    /// nil. A replayed or expired token of alice from one address limits alice there, not
    /// alice everywhere.
    func userRetryAfter(_ user: String, at address: String, reads: LoginReads? = nil) throws(StoreError) -> Int64? {
        try users.retryAfter(Self.userKey(user, address), now: clock.now(), reads: reads)
    }

    /// A login's reads in one statement before its token is verified (`LoginReads`), when
    /// the store is remote and shares the failure counts (PostgreSQL): the address's and the
    /// claimed user's windows and the claimed user and host's policy facts. Leaves `reads`
    /// nil for a store in this process (SQLite: nothing to save) or a token that names no
    /// user and host; a read that fails returns the 503 step (fail closed).
    func readForLogin(_ jwt: String?, _ exchange: Exchange, into reads: inout LoginReads?) -> Step? {
        guard store.sharesFailureCounts, let jwt, let (user, host) = verifier.claimedIdentity(jwt) else { return nil }
        let keys = [addresses.sharedKey(exchange.address), users.sharedKey(Self.userKey(user, exchange.address))]
        do {
            reads = try store.loginReads(user: user, host: host, failureKeys: keys.compactMap { $0 }, now: clock.now())
            return nil
        } catch {
            log.message("login reads unavailable: \(error)")
            exchange.summary.outcome = .error
            exchange.summary.reason = .token(.unavailable)
            return .answer(.error(503, "unavailable"))
        }
    }

    static func userKey(_ user: String, _ address: String) -> String { user + "@" + address }

    // MARK: - The one write

    /// Writes `event` through the group commit — unless `written` (a claim wrote it in its
    /// own transaction) — together with the failure counts a refusal causes: the address
    /// always, and `user` at that address when the request was verified. Then fills the
    /// log summary and counts the outcome for /metrics. A write that fails turns any answer
    /// into 503, so that nothing is answered unrecorded. `counting`: the request's own
    /// limit counts, written in the same batch.
    func finish(
        _ event: AuditEvent, _ answer: HTTPResponse, _ exchange: Exchange, written: Bool = false,
        counting: [WriteItem] = []
    ) -> Step {
        exchange.summary.outcome = event.outcome
        exchange.summary.reason = event.reason
        exchange.summary.sub = event.user
        exchange.summary.claimed = event.claimedUser
        exchange.summary.kid = event.kid
        exchange.summary.jti = event.jti
        let now = clock.now()
        var items: [WriteItem] = (written ? [] : [.audit(event, time: now)]) + counting
        if event.outcome == .deny && event.reason != .code(.rateLimited) {
            items += addresses.failureItems(exchange.address, now: now)
            if event.verified, let user = event.user, event.event == .login || event.event == .oauthToken {
                items += users.failureItems(Self.userKey(user, exchange.address), now: now)
            }
        }
        guard !items.isEmpty else {
            metrics.audited(event, path: exchange.path)
            return .answer(answer)
        }
        return .write(items) { [self] result in
            if case let .failure(error) = result {
                log.message("audit write failed: \(error)")
                exchange.summary.outcome = .error
                exchange.summary.reason = .code(.auditFailed)
                return .answer(.error(503, "unavailable"))
            }
            metrics.audited(event, path: exchange.path)
            return .answer(answer)
        }
    }

    /// Uses up a verified token in one write transaction: the key's status read again, the
    /// jti claimed, `effect` applied on success, the audit row written with the outcome.
    /// `then` gets the outcome, or nil when the write failed (it answers 503).
    func claim(
        _ token: VerifiedToken, event: AuditEvent, effect: ClaimEffect = .none, acceptReason: AuditReason? = nil,
        allowed: [KeyStatus], then: @escaping (WriteOutcome?) -> Step
    ) -> Step {
        let claim = TokenClaim(
            kid: token.identity.kid, user: token.identity.user, host: token.identity.host,
            jti: token.jti, keepUntil: token.keepUntil, allowed: allowed, effect: effect,
            audit: event, acceptReason: acceptReason, time: clock.now())
        return .write([.claim(claim)]) { [self] result in
            switch result {
            case let .success(outcomes):
                let outcome = outcomes.first
                if case .refused? = outcome { verifier.keys.forget(token.identity.kid) }
                return then(outcome)
            case let .failure(error):
                log.message("claim write failed: \(error)")
                return then(nil)
            }
        }
    }

    /// `answer`, after one failure against the exchange's address for a refusal that
    /// writes no audit row (reads with a bad credential); on PostgreSQL that is a write.
    func countingFailure(_ answer: HTTPResponse, _ exchange: Exchange) -> Step {
        let items = addresses.failureItems(exchange.address, now: clock.now())
        guard !items.isEmpty else { return .answer(answer) }
        return .write(items) { _ in .answer(answer) }
    }

    // MARK: - Bodies

    /// Why a body was not usable JSON, with the answer for it.
    struct BodyFailure: Error {
        let code: AuditReason
        let response: HTTPResponse
    }

    /// The body parsed as strict JSON, or the 413/415/400 answer.
    static func jsonBody(_ request: HTTPRequest) -> Result<JSONValue, BodyFailure> {
        guard !request.bodyTooLarge, request.body.count <= maxBodyBytes else {
            return .failure(BodyFailure(code: .code(.bodyTooLarge), response: .error(413, "body_too_large")))
        }
        guard isJSONContentType(request.contentType) else {
            return .failure(
                BodyFailure(code: .code(.unsupportedMediaType), response: .error(415, "unsupported_media_type")))
        }
        do {
            return .success(try JSONParser(maxBytes: maxBodyBytes, maxDepth: 8).parse(request.body))
        } catch {
            return .failure(BodyFailure(code: .code(.invalidJSON), response: .error(400, "invalid_json")))
        }
    }

    /// `application/json`, optionally with parameters (`; charset=utf-8`), any case.
    static func isJSONContentType(_ value: String?) -> Bool {
        guard let value else { return false }
        return MediaType.is(value, "application/json")
    }

    /// The credential of `Authorization: Bearer <credential>`, or nil.
    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = String(parts[1].trimmingSpaces)
        return credential.isEmpty ? nil : credential
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    public var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}

import FingerAuthCore
import FingerAuthKeyFormats

/// The authenticator's operations as plain Swift: an operation and the request's facts in,
/// an `Outcome` out, with the audit row durable before the outcome is given. The transport
/// (FingerAuthTransport) finds the operation, says the outcome on the wire and writes the
/// request's log line.
///
/// Every write of the request path goes through `writer` (group commit): a verified
/// token's key check, jti claim and audit row in one transaction, shared with the other
/// requests of the moment. Refusals count against the client's address; against a user
/// only when the token's signature verified with that user's key. Addresses past their
/// limit are refused (`tooMany`) and counted together (`refusals`), not written one row each.
package final class AuthenticatorService: Sendable {
    /// Largest accepted request body, bytes; beyond it the body is refused (`bodyTooLarge`).
    package static let maxBodyBytes = 16 * 1024
    /// How long the transport holds back a refusal to an address past its limit, its
    /// connection parked: a client that floods on keep-alive connections gets at most one
    /// answer per connection and pause (64 connections: 6,400 a second, not 40,000), and
    /// the pause costs the server no thread and no CPU.
    package static let tarpit = 0.010
    /// An address may make this many times a key's offline uploads per window.
    package static let uploadAddressFactor = 8

    let store: any ServiceRegistry
    let writer: any Committer
    let verifier: TokenVerifier
    let crypto: any AuthenticatorCrypto
    let clock: any AuthClock
    /// Where the service's messages go.
    package let log: any ServiceLog
    let settings: ServiceSettings
    /// Counters for /metrics.
    package let metrics: Metrics
    let users: FailureLimiter
    let addresses: FailureLimiter
    /// Registrations (new keys and the same key again) per host and window.
    let registrations: FailureLimiter
    /// Offline uploads per device key, and per address.
    let keyUploads: FailureLimiter
    let addressUploads: FailureLimiter
    /// Refused requests of addresses past their limit, counted together; the group
    /// commit drains it into `refusals` rows about once a second.
    package let refusals: RefusalCounter
    /// Long polls parked on approvals (`ApprovalEndpoints`).
    package let waits = WaitRoom()
    /// Approval requests per host and per address, and refusals audited once per window.
    let approvalHosts: FailureLimiter
    let approvalAddresses: FailureLimiter
    let approvalRefusals: RefusalOnce

    /// A service over `store` that writes through `writer`, verifies with `policy` and
    /// `crypto`, reads `clock` and logs to `log`. `refusals` must be the counter `writer`
    /// drains (`RefusalCounter.drain`); the console counts its refusals there too.
    package init(
        store: any ServiceRegistry, writer: any Committer, crypto: any AuthenticatorCrypto, policy: VerifierPolicy,
        settings: ServiceSettings = ServiceSettings(), clock: any AuthClock, log: any ServiceLog,
        refusals: RefusalCounter
    ) {
        self.store = store
        self.writer = writer
        self.crypto = crypto
        self.clock = clock
        self.log = log
        self.settings = settings
        self.refusals = refusals
        self.metrics = Metrics()
        self.users = FailureLimiter(settings.userLimit, store: store, scope: "user:")
        self.addresses = FailureLimiter(settings.addressLimit, store: store, scope: "address:")
        self.registrations = FailureLimiter(settings.hostRegistrations, store: store, scope: "registration:")
        self.keyUploads = FailureLimiter(settings.offlineUploads, store: store, scope: "offline-key:")
        let perAddress = RateLimit(
            failures: settings.offlineUploads.failures * Self.uploadAddressFactor,
            window: settings.offlineUploads.window)
        self.addressUploads = FailureLimiter(perAddress, store: store, scope: "offline-address:")
        self.approvalHosts = FailureLimiter(settings.approvals.hostRequests, store: store, scope: "approval-host:")
        self.approvalAddresses = FailureLimiter(
            settings.approvals.addressRequests, store: store, scope: "approval-address:")
        self.approvalRefusals = RefusalOnce(window: settings.approvals.refusalAuditWindow)
        self.verifier = TokenVerifier(policy: policy, clock: clock, keys: KeyCache(store, crypto: crypto))
    }

    /// Starts the group commit's writer thread.
    package func startWriter() { writer.start() }

    /// Writes what is still queued and stops the writer thread.
    package func stopWriter() { writer.stop() }

    /// The outcome of `operation` for `request`, its writes committed on this thread (tests,
    /// and the rare request the transport does not park).
    package func perform(_ operation: ServiceOperation, _ request: ServiceRequest, route: String = "other") -> (
        Exchange, Outcome
    ) {
        let (exchange, first) = start(operation, request, route: route)
        return (exchange, settle(first))
    }

    /// Runs `step` to its outcome, committing each write on this thread.
    package func settle(_ step: Step) -> Outcome {
        var step = step
        while true {
            switch step {
            case let .outcome(outcome), let .outcomeAfterPause(outcome): return outcome
            case let .await(_, _, _, then): step = then()
            case let .write(items, next):
                do throws(StoreError) {
                    step = next(.success(try writer.write(items)))
                } catch {
                    step = next(.failure(error))
                }
            }
        }
    }

    /// The first step of `operation` (limits, parsing, verification: everything before its
    /// first write) and the exchange that carries it to its outcome. `route` names the
    /// operation in /metrics' labels.
    package func start(_ operation: ServiceOperation, _ request: ServiceRequest, route: String) -> (Exchange, Step) {
        let exchange = Exchange(address: request.peer, route: route)
        return (exchange, step(operation, request, exchange))
    }

    /// Has `items` written in the next batch and calls `completion` (on the writer's
    /// thread) once that batch is durable or failed: the transport's way to wait.
    package func submit(
        _ items: [WriteItem], completion: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void
    ) {
        writer.submit(items, completion: completion)
    }

    /// Commits `items` on this thread when the writer is idle (`GroupCommit.commitAlone`);
    /// nil when it is busy and the items must be submitted.
    package func commitAlone(_ items: [WriteItem]) -> Result<[WriteOutcome], StoreError>? {
        writer.commitAlone(items)
    }

    private func step(_ operation: ServiceOperation, _ request: ServiceRequest, _ exchange: Exchange) -> Step {
        switch operation {
        case .health: return .outcome(health(exchange))
        case .metrics: return limited(exchange) ?? metricsAnswer(request, exchange)
        case .login: return login(request, exchange) // its address limit with its other reads
        case .accessToken: return limited(exchange) ?? tokenGrant(request, exchange)
        case .introspect: return limited(exchange) ?? introspect(request, exchange)
        case .register: return limited(exchange) ?? register(request, exchange)
        case .attestationChallenge: return limited(exchange) ?? attestationChallenge(request, exchange)
        case .policyCheck: return limited(exchange) ?? policyCheck(request, exchange)
        case .offlineSync: return limited(exchange) ?? offlineSync(request, exchange)
        case let .revoke(kid): return limited(exchange) ?? revoke(kid: kid, request, exchange)
        case let .keyStatus(kid): return limited(exchange) ?? keyStatus(kid: kid, request, exchange)
        case .requestApproval: return limited(exchange) ?? requestApproval(request, exchange)
        case let .approvalState(id): return limited(exchange) ?? approvalState(id: id, request, exchange)
        case let .withdrawApproval(id): return limited(exchange) ?? withdrawApproval(id: id, request, exchange)
        case .watchApprovals: return limited(exchange) ?? watchApprovals(request, exchange)
        case let .decideApproval(id): return limited(exchange) ?? decideApproval(id: id, request, exchange)
        case .registerHostKey: return limited(exchange) ?? registerHostKey(request, exchange)
        }
    }

    private func health(_ exchange: Exchange) -> Outcome {
        switch store.health() {
        case .available:
            return .health(storeAvailable: true)
        case let .unavailable(reason):
            exchange.facts.reason = .code(.storeUnavailable)
            log.message("health: store unavailable: \(reason)")
            return .health(storeAvailable: false)
        }
    }

    // MARK: - Limits

    /// The refusal when the exchange's address is past its failure limit: counted together
    /// with the address's other refusals of this window (one `refusals` row), not written
    /// alone. A store that cannot say makes it `unavailable` (fail closed).
    func limited(_ exchange: Exchange, reads: LoginReads? = nil) -> Step? {
        let address = exchange.address
        let wait: Int64?
        do { wait = try addresses.retryAfter(address, now: clock.now(), reads: reads) } catch {
            log.message("rate limit counter unavailable: \(error)")
            exchange.facts.outcome = .error
            exchange.facts.reason = .token(.unavailable)
            return .outcome(.unavailable)
        }
        guard let wait else { return nil }
        if refusals.add(peer: address, reason: .rateLimited, now: clock.now()) {
            log.message(
                "\(address) is past its failure limit: its requests are answered 429 for \(wait) s, "
                    + "counted in one audit row (event refusals) and not logged one by one")
        } else {
            exchange.facts.quiet = true
        }
        exchange.facts.outcome = .deny
        exchange.facts.reason = .code(.rateLimited)
        metrics.rateLimited(scope: "address")
        return .outcomeAfterPause(.tooMany(retryAfter: wait))
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
    /// user and host; a read that fails ends in `unavailable` (fail closed).
    func readForLogin(_ jwt: String?, _ exchange: Exchange, into reads: inout LoginReads?) -> Step? {
        guard store.sharesFailureCounts, let jwt, let (user, host) = verifier.claimedIdentity(jwt) else { return nil }
        let keys = [addresses.sharedKey(exchange.address), users.sharedKey(Self.userKey(user, exchange.address))]
        do {
            reads = try store.loginReads(user: user, host: host, failureKeys: keys.compactMap { $0 }, now: clock.now())
            return nil
        } catch {
            log.message("login reads unavailable: \(error)")
            exchange.facts.outcome = .error
            exchange.facts.reason = .token(.unavailable)
            return .outcome(.unavailable)
        }
    }

    static func userKey(_ user: String, _ address: String) -> String { user + "@" + address }

    // MARK: - The one write

    /// Writes `event` through the group commit — unless `written` (a claim wrote it in its
    /// own transaction) — together with the failure counts a refusal causes: the address
    /// always, and `user` at that address when the request was verified. Then fills the
    /// log facts and counts the event for /metrics. A write that fails turns any outcome
    /// into `unavailable`, so that nothing is answered unrecorded. `counting`: the request's own
    /// limit counts, written in the same batch.
    func finish(
        _ event: AuditEvent, _ answer: Outcome, _ exchange: Exchange, written: Bool = false,
        counting: [WriteItem] = []
    ) -> Step {
        exchange.facts.outcome = event.outcome
        exchange.facts.reason = event.reason
        exchange.facts.sub = event.user
        exchange.facts.claimed = event.claimedUser
        exchange.facts.kid = event.kid
        exchange.facts.jti = event.jti
        let now = clock.now()
        var items: [WriteItem] = (written ? [] : [.audit(event, time: now)]) + counting
        if event.outcome == .deny && event.reason != .code(.rateLimited) {
            items += addresses.failureItems(exchange.address, now: now)
            if event.verified, let user = event.user, event.event == .login || event.event == .oauthToken {
                items += users.failureItems(Self.userKey(user, exchange.address), now: now)
            }
        }
        guard !items.isEmpty else {
            metrics.audited(event, route: exchange.route)
            return .outcome(answer)
        }
        return .write(items) { [self] result in
            if case let .failure(error) = result {
                log.message("audit write failed: \(error)")
                exchange.facts.outcome = .error
                exchange.facts.reason = .code(.auditFailed)
                return .outcome(.unavailable)
            }
            metrics.audited(event, route: exchange.route)
            return .outcome(answer)
        }
    }

    /// Uses up a verified token in one write transaction: the key's status read again, the
    /// jti claimed, `effect` applied on success, the audit row written with the outcome.
    /// `then` gets the outcome, or nil when the write failed (it ends in `unavailable`).
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
    func countingFailure(_ answer: Outcome, _ exchange: Exchange) -> Step {
        let items = addresses.failureItems(exchange.address, now: clock.now())
        guard !items.isEmpty else { return .outcome(answer) }
        return .write(items) { _ in .outcome(answer) }
    }

    // MARK: - Bodies

    /// Why a body or credential was not usable, with the outcome for it.
    struct BodyFailure: Error {
        let code: AuditReason
        let outcome: Outcome
    }

    /// The body parsed as strict JSON, or why not.
    static func jsonBody(_ request: ServiceRequest) -> Result<JSONValue, BodyFailure> {
        guard !request.bodyTooLarge, request.body.count <= maxBodyBytes else {
            return .failure(BodyFailure(code: .code(.bodyTooLarge), outcome: .malformed(.bodyTooLarge)))
        }
        guard request.media == .json else {
            return .failure(BodyFailure(code: .code(.unsupportedMediaType), outcome: .malformed(.mediaType)))
        }
        do {
            return .success(try JSONParser(maxBytes: maxBodyBytes, maxDepth: 8).parse(request.body))
        } catch {
            return .failure(BodyFailure(code: .code(.invalidJSON), outcome: .malformed(.json)))
        }
    }
}

import FingerAuthCore

/// Remote approval: a host asks (`requestApproval`, signed by its host key), waits
/// (`approvalState`, a long poll) or withdraws (`withdrawApproval`); the user's workstation
/// watches (`watchApprovals`, a long poll with the device key's watch token) and the person
/// decides (`decideApproval`, a decision token signed by the device key after a finger).
/// The pending row in the database is the truth (`ApprovalStore`); every change of it wakes
/// the polls parked on it (`WaitRoom`). See docs/ARCHITECTURE.md, "Remote approval".
extension AuthenticatorService {
    // MARK: - The host's request

    /// Records a pending approval: the host key's signature, the request's claims, the host's
    /// and address's request limits, the policy's `approve` stage, then the store's one
    /// transaction (one pending per user, a retry from the same place replaces it, a recent
    /// denial mutes). 201 with the id, the code and the authenticator's clock.
    func requestApproval(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .approvalRequest, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let token: String
        switch Self.jwtBody(request, &event) {
        case let .failure(failure): return finish(event, failure.outcome, exchange)
        case let .success(jwt): token = jwt
        }
        let call: VerifiedCall
        switch verifiedCall(token, .approvalRequest, &event) {
        case let .answer(outcome): return finish(event, outcome, exchange)
        case let .verified(verified): call = verified
        }
        let user = call.identity.user
        let host = call.identity.host
        event.user = user
        let claims = call.claims
        guard let service = claims["service"]?.stringValue, ServiceName.isValid(service),
            let clientAddress = Self.approvalText(claims["rhost"], limit: 255),
            let terminal = Self.approvalText(claims["tty"], limit: 64),
            let nonce = claims["nonce"]?.stringValue, Self.isNonce(nonce),
            let named = Self.approvalText(claims["caller"], limit: 64)
        else {
            event.reason = .code(.invalidRequest)
            return finish(event, .malformed(.request), exchange)
        }
        event.service = service
        event.clientAddress = clientAddress
        // Who asks, when not the user (`su` from another user's session): shown to the person.
        let caller = named.sameBytes(as: user) ? "" : named
        let now = clock.now()
        let settings = self.settings.approvals
        do throws(StoreError) {
            let hostWait = try approvalHosts.retryAfter(host, now: now)
            let addressWait = try approvalAddresses.retryAfter(exchange.address, now: now)
            if let wait = hostWait ?? addressWait {
                event.reason = .code(.approvalsLimited)
                return refusedApproval(event, .tooMany(retryAfter: wait), subject: host, exchange)
            }
        } catch {
            return unavailableApproval(event, error, exchange)
        }
        // The request's key kind is not known yet: a rule that asks for a hardware key is
        // decided at the decision, by the workstation's key.
        let stage = PolicyRequest(stage: .approve, user: user, host: host, service: service, keyKind: .hardware)
        if let denied = policyRefusal(stage, &event) {
            return finish(event, denied, exchange)
        }
        guard let id = crypto.bytes(16).map(Base64URL.encode), let digit = crypto.bytes(1)?.first else {
            event.outcome = .error
            event.reason = .code(.noRandom)
            return finish(event, .unavailable, exchange)
        }
        let record = ApprovalRecord(
            id: id, code: String(10 + Int(digit) % 90), user: user, host: host, hostKid: call.identity.kid,
            service: service, clientAddress: clientAddress, terminal: terminal, nonce: nonce, caller: caller,
            created: now,
            expires: min(call.exp, now + SignedCall.approvalRequest.maxLifetime))
        event.approval = id
        event.outcome = .accept
        event.reason = nil
        let counted =
            approvalHosts.failureItems(host, now: now) + approvalAddresses.failureItems(exchange.address, now: now)
        let admission: ApprovalAdmission
        do {
            admission = try store.openApproval(
                record, jti: call.jti, keepUntil: call.keepUntil, muteSeconds: settings.muteSeconds, audit: event,
                now: now)
        } catch {
            return unavailableApproval(event, error, exchange)
        }
        event.outcome = .deny
        switch admission {
        case let .opened(replaced):
            event.outcome = .accept
            if let replaced { waits.wake(.approval(replaced)) }
            waits.wake(.user(user))
            log.message(
                "approval \(id) pending: \(LogText.clean(user)) to \(LogText.clean(service)) on "
                    + "\(LogText.clean(host))\(caller.isEmpty ? "" : ", asked by \(LogText.clean(caller))")"
                    + "\(replaced.map { ", replacing \($0)" } ?? "")")
            // Where to touch, for the host's prompt: a read the request's row does not need.
            // The asking host is no workstation for its own login, even where the user has a key.
            let workstations = ((try? store.activeKeyHosts(user: user, limit: 5)) ?? []).filter {
                !$0.sameBytes(as: host)
            }.prefix(4).map { $0 }
            return finish(
                event, .approvalOpened(record, serverTime: now, workstations: workstations), exchange, written: true,
                counting: counted)
        case .pendingElsewhere:
            event.approval = nil
            event.reason = .code(.approvalPending)
            return refusedApproval(event, .approvalRefused(.pending), subject: user, exchange, counting: counted)
        case let .muted(until):
            event.approval = nil
            event.reason = .code(.approvalMuted)
            let wait = max(1, until - now)
            return refusedApproval(event, .approvalRefused(.muted(retryAfter: wait)), subject: user, exchange)
        case .replayed:
            event.approval = nil
            event.reason = .token(.replayed)
            return finish(event, .tokenRefused(.replayed), exchange)
        }
    }

    // MARK: - The host waits, or withdraws

    /// Where approval `id` stands, for the host that asked; with `wait`, parked until it
    /// changes (at most `maxWait` s, never past its expiry). An approval past its expiry is
    /// recorded `expired` here. Another host's approval is `unknown`, as one that never was.
    func approvalState(id: String, _ request: ServiceRequest, _ exchange: Exchange) -> Step {
        let version = waits.version(.approval(id))
        let record: ApprovalRecord
        switch hostsApproval(id, request, exchange) {
        case let .answer(step): return step
        case let .found(found): record = found
        }
        let now = clock.now()
        let wait = min(Self.waitSeconds(request), settings.approvals.maxWait, max(0, record.expires - now))
        guard record.status == .pending, wait > 0 else {
            return .outcome(.approvalState(record, serverTime: now))
        }
        return hostWait(id, record, version: version, until: now + wait)
    }

    /// The host's poll parked until approval `id` leaves `pending`, expires or `end` (epoch
    /// seconds) comes. A wake-up that changed nothing parks it again for the rest: on
    /// PostgreSQL the notice of the approval's own creation may arrive after the poll parked,
    /// and a timer may fire a moment before the wall clock's second that expires it.
    private func hostWait(_ id: String, _ record: ApprovalRecord, version: UInt64, until end: Int64) -> Step {
        let now = clock.now()
        let left = min(end, record.expires) - now
        guard record.status == .pending, left > 0 else {
            return .outcome(.approvalState(expireIfDue(record), serverTime: now))
        }
        return .await(.approval(id), version: version, seconds: Double(left)) { [self] in
            let version = waits.version(.approval(id))
            let again = (try? store.approval(id: id)).flatMap { $0 } ?? record
            return hostWait(id, again, version: version, until: end)
        }
    }

    /// The host that asked withdraws approval `id` (the password was typed, the login ended):
    /// its workstations' notifications go. Withdrawing one that left `pending` changes nothing.
    func withdrawApproval(id: String, _ request: ServiceRequest, _ exchange: Exchange) -> Step {
        let record: ApprovalRecord
        switch hostsApproval(id, request, exchange) {
        case let .answer(step): return step
        case let .found(found): record = found
        }
        let peer = LogText.clean(exchange.address)
        let closed: ApprovalRecord?
        do {
            closed = try store.closeApproval(
                id: id, as: .withdrawn,
                audit: { Self.approvalRow(.approvalWithdrawn, $0, outcome: .accept, peer: peer) }, now: clock.now())
        } catch {
            log.message("approval store unavailable: \(error)")
            return .outcome(.unavailable)
        }
        if let closed {
            wakeAll(closed)
            return .outcome(.approvalState(closed, serverTime: clock.now()))
        }
        return .outcome(.approvalState(expireIfDue(record), serverTime: clock.now()))
    }

    // MARK: - The workstation watches

    /// The pending approvals of the watch token's user. Answered at once when they differ
    /// from what the workstation has (`have`: the id it shows, or `-`), else parked until
    /// they change or `wait` passes (the workstation's heartbeat). Each approval delivered
    /// anew writes its `approval_shown` row naming the workstation.
    func watchApprovals(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .approvalShown, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        guard let token = request.credential else {
            exchange.facts.outcome = .deny
            exchange.facts.reason = .code(.invalidRequest)
            return countingFailure(.unverifiedToken, exchange)
        }
        let call: VerifiedCall
        switch verifiedCall(token, .watch, &event) {
        case let .answer(outcome):
            exchange.facts.outcome = event.outcome
            exchange.facts.reason = event.reason
            exchange.facts.claimed = event.claimedUser
            return countingFailure(outcome, exchange)
        case let .verified(verified): call = verified
        }
        let user = call.identity.user
        exchange.facts.sub = user
        exchange.facts.kid = call.identity.kid
        let have = request.query["have"] ?? "-"
        let version = waits.version(.user(user))
        let pending: [ApprovalRecord]
        do { pending = try openApprovals(of: user) } catch {
            log.message("approval store unavailable: \(error)")
            return .outcome(.unavailable)
        }
        let wait = min(Self.waitSeconds(request), settings.approvals.maxWait)
        if Self.watchDiffers(pending, have: have) || wait <= 0 {
            return delivered(pending, have: have, call, exchange)
        }
        return .await(.user(user), version: version, seconds: Double(wait)) { [self] in
            let now = (try? openApprovals(of: user)) ?? []
            return delivered(now, have: have, call, exchange)
        }
    }

    // MARK: - The person decides

    /// A decision token signed by the user's device key after a finger (or "Not me"): it must
    /// name this approval, its nonce, host, service, client address and code, and come from
    /// the approval's own user; the policy's `approve` stage decides with the workstation's
    /// key kind. The store decides exactly once: the first decision wins, a later one hears
    /// `closed`. An approval writes its `approval_approved` row and the asking host's `login`
    /// row naming it; a denial its `approval_denied` row, and mutes the user's requests.
    func decideApproval(id: String, _ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .approvalApproved, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        event.approval = LogText.clean(id, limit: 64)
        let token: String
        switch Self.jwtBody(request, &event) {
        case let .failure(failure): return finish(event, failure.outcome, exchange)
        case let .success(jwt): token = jwt
        }
        let call: VerifiedCall
        switch verifiedCall(token, .decision, &event) {
        case let .answer(outcome): return finish(event, outcome, exchange)
        case let .verified(verified): call = verified
        }
        event.user = call.identity.user
        event.workstation = call.identity.host
        event.host = nil
        let claims = call.claims
        guard let choice = claims["decision"]?.stringValue.flatMap(ApprovalVerdict.init(rawValue:)),
            let named = claims["approval"]?.stringValue
        else {
            event.reason = .code(.invalidRequest)
            return finish(event, .malformed(.request), exchange)
        }
        let approve = choice == .approve
        if !approve { event.event = .approvalDenied }
        let found: ApprovalRecord?
        do { found = try store.approval(id: id) } catch {
            return unavailableApproval(event, error, exchange)
        }
        guard named.sameBytes(as: id), let record = found else {
            event.reason = .code(.approvalUnknown)
            return finish(event, .approvalRefused(.unknown), exchange)
        }
        event.host = record.host
        event.service = record.service
        event.clientAddress = record.clientAddress
        guard record.user.sameBytes(as: call.identity.user) else {
            event.reason = .code(.notYourApproval)
            return finish(event, .approvalRefused(.notYours), exchange)
        }
        guard Self.decisionMatches(claims, record) else {
            event.reason = .code(.approvalMismatch)
            return finish(event, .approvalRefused(.mismatch), exchange)
        }
        if approve {
            let stage = PolicyRequest(
                stage: .approve, user: record.user, host: record.host, service: record.service,
                keyKind: call.identity.kind.policyKind, ek: call.identity.ek)
            if let denied = policyRefusal(stage, &event) { return finish(event, denied, exchange) }
        }
        let decision = ApprovalDecision(
            id: id, user: call.identity.user, approve: approve, kid: call.identity.kid, workstation: call.identity.host,
            jti: call.jti,
            keepUntil: call.keepUntil)
        let peer = LogText.clean(exchange.address)
        let jti = call.jti
        let result: DecisionResult
        do {
            result = try store.decideApproval(
                decision, audit: { Self.decisionRows($0, jti: jti, peer: peer) }, now: clock.now())
        } catch {
            return unavailableApproval(event, error, exchange)
        }
        switch result {
        case let .decided(after):
            wakeAll(after)
            log.message(
                "approval \(id) \(after.status.rawValue) by \(LogText.clean(record.user)) on "
                    + "\(LogText.clean(call.identity.host)) (key \(call.identity.kid))")
            event.outcome = approve ? .accept : .deny
            event.reason = nil
            event.jti = jti
            return finish(event, .approvalDecided(after.status), exchange, written: true)
        case let .closed(status):
            event.reason = .code(.approvalClosed)
            return finish(event, .approvalRefused(.closed(status)), exchange)
        case .expired:
            wakeAll(record)
            event.reason = .code(.approvalClosed)
            return finish(event, .approvalRefused(.closed(.expired)), exchange)
        case .unknown:
            event.reason = .code(.approvalUnknown)
            return finish(event, .approvalRefused(.unknown), exchange)
        case .replayed:
            event.reason = .token(.replayed)
            return finish(event, .tokenRefused(.replayed), exchange)
        case let .keyRefused(refusal):
            verifier.keys.forget(call.identity.kid)
            let reason = Refusal(refusal)
            event.reason = .token(reason)
            return finish(event, .tokenRefused(reason), exchange)
        }
    }
}

import FingerAuthCore

/// What the approval endpoints share: the signed call's check, the host's own approval,
/// the watch's deliveries, the rows, the bounded refusals.
extension AuthenticatorService {
    enum CallResult {
        case verified(VerifiedCall)
        case answer(Outcome)
    }

    /// `token` checked as `kind`; `event` gets what is known of its signer either way.
    func verifiedCall(_ token: String, _ kind: SignedCall, _ event: inout AuditEvent) -> CallResult {
        let check = verifier.check(token, call: kind, hostKeys: store)
        let facts = check.facts
        event.kid = facts.kid
        event.jti = facts.jti
        switch check {
        case .unavailable:
            event.claimedUser = facts.sub
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .answer(.unavailable)
        case let .unverified(reason, _):
            event.claimedUser = facts.sub
            event.reason = .token(reason)
            metrics.unverified()
            return .answer(.unverifiedToken)
        case let .refused(reason, identity, _):
            event.verified = true
            event.kid = identity.kid
            if kind.signedByHost {
                event.host = identity.host
                event.claimedUser = facts.sub
            } else {
                event.user = identity.user
                event.workstation = identity.host
            }
            event.reason = .token(reason)
            return .answer(.tokenRefused(reason))
        case let .valid(call, _):
            event.verified = true
            event.kid = call.identity.kid
            event.jti = call.jti
            if kind.signedByHost { event.host = call.identity.host }
            return .verified(call)
        }
    }

    enum HostsApproval {
        case found(ApprovalRecord)
        case answer(Step)
    }

    /// Approval `id` for the host whose host key signed the bearer token (`hostCall`, naming
    /// `id` in its `approval` claim); `unknown` for another host's, as for none.
    func hostsApproval(_ id: String, _ request: ServiceRequest, _ exchange: Exchange) -> HostsApproval {
        var event = AuditEvent(event: .approvalRequest, outcome: .deny, verified: false)
        guard let token = request.credential else {
            exchange.facts.outcome = .deny
            exchange.facts.reason = .code(.invalidRequest)
            return .answer(countingFailure(.unverifiedToken, exchange))
        }
        let call: VerifiedCall
        switch verifiedCall(token, .hostCall, &event) {
        case let .answer(outcome):
            exchange.facts.outcome = event.outcome
            exchange.facts.reason = event.reason
            exchange.facts.kid = event.kid
            return .answer(countingFailure(outcome, exchange))
        case let .verified(verified): call = verified
        }
        exchange.facts.kid = call.identity.kid
        guard let named = call.claims["approval"]?.stringValue, named.sameBytes(as: id) else {
            exchange.facts.outcome = .deny
            exchange.facts.reason = .code(.approvalMismatch)
            return .answer(.outcome(.approvalRefused(.mismatch)))
        }
        let found: ApprovalRecord?
        do { found = try store.approval(id: id) } catch {
            log.message("approval store unavailable: \(error)")
            return .answer(.outcome(.unavailable))
        }
        guard let record = found, record.host.sameBytes(as: call.identity.host) else {
            exchange.facts.outcome = .deny
            exchange.facts.reason = .code(.approvalUnknown)
            return .answer(.outcome(.approvalRefused(.unknown)))
        }
        exchange.facts.sub = record.user
        return .found(expireIfDue(record))
    }

    /// `record`, recorded `expired` (with its row, once) when it is pending past its expiry.
    func expireIfDue(_ record: ApprovalRecord) -> ApprovalRecord {
        guard record.status == .pending, clock.now() >= record.expires else { return record }
        let closed = try? store.closeApproval(
            id: record.id, as: .expired, audit: { Self.approvalRow(.approvalExpired, $0, outcome: .accept, peer: nil) },
            now: clock.now())
        if let closed {
            wakeAll(closed)
            return closed
        }
        var expired = record
        expired.status = .expired
        return expired
    }

    /// The user's pending approvals that have not expired; overdue ones are recorded `expired`.
    func openApprovals(of user: String) throws(StoreError) -> [ApprovalRecord] {
        let now = clock.now()
        return try store.pendingApprovals(user: user, now: now).filter { record in
            if record.isOpen(at: now) { return true }
            _ = expireIfDue(record)
            return false
        }
    }

    /// Wakes the host waiting for `record` and the workstations watching its user.
    func wakeAll(_ record: ApprovalRecord) {
        waits.wake(.approval(record.id))
        waits.wake(.user(record.user))
    }

    /// The watch's answer: `pending`, each approval the workstation did not have recorded as
    /// shown to it.
    func delivered(_ pending: [ApprovalRecord], have: String, _ call: VerifiedCall, _ exchange: Exchange) -> Step {
        let now = clock.now()
        let answer = Outcome.approvalsWatched(pending, serverTime: now)
        let peer = LogText.clean(exchange.address)
        let rows = pending.filter { !$0.id.sameBytes(as: have) }.map { record -> WriteItem in
            var row = Self.approvalRow(.approvalShown, record, outcome: .accept, peer: peer)
            row.kid = call.identity.kid
            row.workstation = call.identity.host
            return .audit(row, time: now)
        }
        guard !rows.isEmpty else { return .outcome(answer) }
        return .write(rows) { [self] result in
            if case let .failure(error) = result { log.message("approval_shown rows not written: \(error)") }
            return .outcome(answer)
        }
    }

    /// A row about `record` (its user, host, service, client address and id).
    static func approvalRow(
        _ kind: AuditEventKind, _ record: ApprovalRecord, outcome: AuditOutcome, peer: String?
    ) -> AuditEvent {
        var row = AuditEvent(
            event: kind, user: record.user, host: record.host, kid: record.decidedKid, outcome: outcome, peer: peer)
        row.service = record.service
        row.clientAddress = record.clientAddress
        row.approval = record.id
        row.workstation = record.workstation
        return row
    }

    /// The rows a decision writes with it: `approval_approved` and the asking host's `login`
    /// row naming the approval, or `approval_denied`.
    static func decisionRows(_ record: ApprovalRecord, jti: String, peer: String) -> [AuditEvent] {
        guard record.status == .approved else {
            var denied = approvalRow(.approvalDenied, record, outcome: .deny, peer: peer)
            denied.reason = .code(.approvalMuted)
            denied.jti = jti
            return [denied]
        }
        var approved = approvalRow(.approvalApproved, record, outcome: .accept, peer: peer)
        approved.jti = jti
        var login = approvalRow(.login, record, outcome: .accept, peer: peer)
        login.reason = .detail("remote approval")
        return [approved, login]
    }

    /// Whether a decision's claims name exactly what the person was shown.
    static func decisionMatches(_ claims: JSONValue, _ record: ApprovalRecord) -> Bool {
        let expected: [(String, String)] = [
            ("nonce", record.nonce), ("host", record.host), ("service", record.service),
            ("rhost", record.clientAddress), ("code", record.code),
        ]
        // Who asked, as shown: absent in a decision means "the user themself".
        let caller = claims["caller"].map { $0.stringValue } ?? ""
        return caller?.sameBytes(as: record.caller) == true
            && expected.allSatisfy { name, value in claims[name]?.stringValue?.sameBytes(as: value) == true }
    }

    /// Whether the watch's answer differs from what the workstation shows (`have`).
    static func watchDiffers(_ pending: [ApprovalRecord], have: String) -> Bool {
        guard let first = pending.first else { return have != "-" }
        return pending.count > 1 || !first.id.sameBytes(as: have)
    }

    /// A request refused for a reason of the approvals' own: its row is written for the
    /// first such refusal of `subject` in the window, the others are counted only.
    func refusedApproval(
        _ event: AuditEvent, _ answer: Outcome, subject: String, _ exchange: Exchange, counting: [WriteItem] = []
    ) -> Step {
        guard let reason = event.reason, case let .code(code) = reason,
            !approvalRefusals.first(subject, code, now: clock.now())
        else {
            return finish(event, answer, exchange, counting: counting)
        }
        exchange.facts.outcome = event.outcome
        exchange.facts.reason = event.reason
        exchange.facts.sub = event.user
        exchange.facts.quiet = true
        metrics.audited(event, route: exchange.route)
        guard !counting.isEmpty else { return .outcome(answer) }
        return .write(counting) { _ in .outcome(answer) }
    }

    func unavailableApproval(_ event: AuditEvent, _ error: StoreError, _ exchange: Exchange) -> Step {
        log.message("approval store unavailable: \(error)")
        var row = event
        row.outcome = .error
        row.reason = .token(.unavailable)
        exchange.facts.outcome = .error
        exchange.facts.reason = row.reason
        return .outcome(.unavailable)
    }

    /// The token of a `{"jwt": "…"}` body, or why not (`event` gets the reason).
    static func jwtBody(_ request: ServiceRequest, _ event: inout AuditEvent) -> Result<String, BodyFailure> {
        switch jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return .failure(failure)
        case let .success(body):
            guard let jwt = body["jwt"]?.stringValue else {
                event.reason = .code(.invalidRequest)
                return .failure(BodyFailure(code: .code(.invalidRequest), outcome: .malformed(.request)))
            }
            return .success(jwt)
        }
    }

    /// A claim's text as the host sends it (`rhost`, `tty`): absent or empty is empty; else
    /// printable ASCII without spaces, at most `limit` bytes.
    static func approvalText(_ value: JSONValue?, limit: Int) -> String? {
        guard let value else { return "" }
        guard let text = value.stringValue else { return nil }
        if text.isEmpty { return "" }
        return TokenVerifier.isClaimWord(text, maxBytes: limit) ? text : nil
    }

    /// A session nonce: 22 to 128 base64url characters (at least 128 bits).
    static func isNonce(_ text: String) -> Bool {
        (22...128).contains(text.utf8.count) && text.utf8.allSatisfy(Base64URL.isAlphabet)
    }

    /// The long poll's `wait` parameter, whole seconds (0 when absent or not a number).
    static func waitSeconds(_ request: ServiceRequest) -> Int64 {
        guard let text = request.query["wait"], text.utf8.count <= 4, let seconds = Int64(text) else { return 0 }
        return max(0, seconds)
    }
}

/// The fleet's wake-ups (PostgreSQL's notices from every instance, this one's included: a
/// spurious wake-up only answers a poll early).
extension AuthenticatorService: ApprovalWakeups {
    package func approvalChanged(_ notice: ApprovalNotice) {
        metrics.approvalNotice()
        waits.wake(.approval(notice.id))
        waits.wake(.user(notice.user))
    }

    package func anythingMayHaveChanged() {
        waits.wakeEveryone()
    }
}

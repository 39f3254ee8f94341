import FingerAuthCore

extension AuthenticatorService {
    /// How a token ended at its endpoint.
    enum TokenUse {
        /// Accepted and its jti used up (the audit row is written), with the offline grant
        /// recorded for it (a login at `/v1/login` that the policy gives one).
        case accepted(VerifiedToken, AuditEvent, IssuedGrant?)
        /// Refused: the row to write (unless `written`) and the outcome.
        case answered(AuditEvent, Outcome, written: Bool)
    }

    /// The path every signed token takes (`/v1/login`, `/oauth2/token`, a key holder's
    /// `DELETE /v1/keys/<kid>`): verify it as a token of `purpose`, then — for a login —
    /// the user's limit (a verified identity only), then the claim in the write transaction
    /// (`allowed` key states, `effect`, `acceptReason` on the audit row); `then` turns how it
    /// ended into the operation's outcome. `reads`: a login's reads made ahead (`LoginReads`), used where they fit the verified
    /// identity. `issuesGrant`: an accepted login also gets the offline grant its policy
    /// allows (when a grant key is configured), recorded in the claim's transaction.
    func useToken(
        _ token: String, as purpose: TokenPurpose = .login, event start: AuditEvent, _ exchange: Exchange,
        allowed: [KeyStatus] = [.active], effect: ClaimEffect = .none, acceptReason: AuditReason? = nil,
        reads: LoginReads? = nil, issuesGrant: Bool = false,
        then: @escaping (TokenUse) -> Step
    ) -> Step {
        var event = start
        let check = verifier.check(token, for: purpose)
        let facts = check.facts
        event.kid = event.kid ?? facts.kid
        event.jti = facts.jti
        let limitsUser = purpose == .login
        switch check {
        case .unavailable:
            event.stages = nil // a stranger's numbers are not kept
            event.claimedUser = facts.sub
            event.outcome = .error
            event.reason = .token(.unavailable)
            return then(.answered(event, .unavailable, written: false))
        case let .unverified(reason, _):
            event.stages = nil
            event.claimedUser = facts.sub
            event.reason = .token(reason)
            metrics.unverified()
            if reason == .invalidUserName {
                return then(.answered(event, .malformed(.userName(facts.sub ?? "", field: "sub")), written: false))
            }
            return then(.answered(event, .unverifiedToken, written: false))
        case let .refused(reason, identity, _):
            event.verified = true
            event.user = identity.user
            event.host = identity.host
            event.kid = identity.kid
            if limitsUser, let limited = userLimited(identity.user, exchange.address, reads, &event) {
                return then(limited)
            }
            event.reason = .token(reason)
            return then(.answered(event, .tokenRefused(reason), written: false))
        case let .valid(verified, _):
            event.verified = true
            event.user = verified.identity.user
            event.host = verified.identity.host
            event.kid = verified.identity.kid
            event.jti = verified.jti
            event.service = verified.service
            event.clientService = verified.clientService
            if limitsUser, let limited = userLimited(verified.identity.user, exchange.address, reads, &event) {
                return then(limited)
            }
            var claimEffect = effect
            var issued: IssuedGrant?
            var accepted = acceptReason
            if purpose == .login {
                let request = PolicyRequest(
                    stage: .login, user: verified.identity.user, host: verified.identity.host,
                    service: verified.service, keyKind: verified.identity.kind.policyKind,
                    ek: verified.identity.ek)
                var snapshot = reads?.policy(user: request.user, host: request.host)
                let grants = issuesGrant && settings.grantSigner != nil
                if grants && snapshot == nil {
                    // A failed read is read again (and ends in `unavailable`) by the policy's own check.
                    snapshot = try? store.policySnapshot(user: request.user, host: request.host)
                }
                if let denied = policyRefusal(request, &event, snapshot: snapshot) {
                    return then(.answered(event, denied, written: false))
                }
                if grants, let snapshot {
                    issued = offlineGrant(verified, request, snapshot)
                    claimEffect = .offlineGrant(issued)
                    if let issued { accepted = .detail("offline grant \(issued.gid) until \(issued.notAfter)") }
                }
                if settings.requireHardwareKeys && verified.identity.kind != .attestedTPM {
                    event.reason = .code(.hardwareKeyRequired)
                    return then(.answered(event, .forbidden(.code(.hardwareKeyRequired)), written: false))
                }
            }
            let claimed = event
            let reason = accepted
            let grant = issued
            return claim(verified, event: claimed, effect: claimEffect, acceptReason: reason, allowed: allowed) {
                outcome in
                var row = claimed
                switch outcome {
                case nil, .offlineStored?:
                    row.outcome = .error
                    row.reason = .token(.unavailable)
                    return then(.answered(row, .unavailable, written: false))
                case .accepted?, .written?:
                    row.outcome = .accept
                    row.reason = reason
                    return then(.accepted(verified, row, grant))
                case let .refused(claimRefusal)?:
                    let reason = Refusal(claimRefusal)
                    row.reason = .token(reason)
                    return then(.answered(row, .tokenRefused(reason), written: true))
                }
            }
        }
    }

    /// The refusal for a verified user past their limit at this address (the row keeps its user).
    private func userLimited(_ user: String, _ address: String, _ reads: LoginReads?, _ event: inout AuditEvent)
        -> TokenUse?
    {
        let wait: Int64?
        do { wait = try userRetryAfter(user, at: address, reads: reads) } catch {
            log.message("rate limit counter unavailable: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .answered(event, .unavailable, written: false)
        }
        guard let wait else { return nil }
        event.outcome = .deny
        event.reason = .code(.rateLimited)
        metrics.rateLimited(scope: "user")
        return .answered(event, .tooMany(retryAfter: wait), written: false)
    }
}

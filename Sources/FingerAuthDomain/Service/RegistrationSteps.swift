import FingerAuthCore

/// The steps every registration shares, a device key's (`register`) and a host key's
/// (`registerHostKey`): the first checks (body size, host token, the host's registrations in
/// this window, a JSON body), the new key, its proof, and the last step that writes.
extension AuthenticatorService {
    /// A registration's (device key or host key) last step: a host past its registrations
    /// paused and counted with the address's refusals; else the audit row (unless the
    /// registry `written` it) and, for a key registered, its count against the host.
    func registrationStep(_ event: AuditEvent, _ answer: Outcome, _ exchange: Exchange, written: Bool) -> Step {
        if case .tooMany = answer, event.reason == .code(.registrationsLimited) {
            exchange.facts.outcome = .deny
            exchange.facts.reason = event.reason
            return .outcomeAfterPause(answer)
        }
        var counted: [WriteItem] = []
        switch answer {
        case .registered, .hostKeyRegistered:
            if let host = event.host { counted = registrations.failureItems(host, now: clock.now()) }
        default: break
        }
        return finish(event, answer, exchange, written: written, counting: counted)
    }

    /// What every registration checks first: the body's size, the host token, the host's
    /// registrations in this window and a JSON body. The token's host and the body, or the
    /// refusal (its reason in `event`).
    func registrationStart(_ request: ServiceRequest, _ event: inout AuditEvent, _ exchange: Exchange)
        -> Result<(tokenHost: String, body: JSONValue), RegistrationRefusal>
    {
        if request.bodyTooLarge || request.body.count > Self.maxBodyBytes {
            event.reason = .code(.bodyTooLarge)
            return .failure(RegistrationRefusal(.malformed(.bodyTooLarge)))
        }
        let tokenHost: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return .failure(RegistrationRefusal(answer))
        case let .host(host): tokenHost = host
        }
        if let limited = registrationsLimited(tokenHost, exchange, &event) {
            return .failure(RegistrationRefusal(limited))
        }
        switch Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return .failure(RegistrationRefusal(failure.outcome))
        case let .success(value):
            return .success((tokenHost, value))
        }
    }

    /// The new key a registration's `jwk` member holds: an RSA key the crypto takes (2048 to
    /// 8192 bits) and its RFC 7638 thumbprint; nil (reason `invalid_jwk` in `event`) otherwise.
    func newKey(_ jwkJSON: JSONValue, _ event: inout AuditEvent) -> (jwk: JWK, kid: String)? {
        guard jwkJSON["kty"]?.stringValue == "RSA", let jwk = JWK(json: jwkJSON),
            crypto.signatureKey(jwk) != nil, let kid = crypto.thumbprint(of: jwk)
        else {
            event.reason = .code(.invalidJWK)
            return nil
        }
        event.kid = kid
        return (jwk, kid)
    }

    /// A registration's proof checked for `purpose`: the verified token, or the refusal
    /// (`proofRefused` with the reason, `unavailable` as an error), recorded in `event`.
    func checkedProof(_ proof: String, for purpose: TokenPurpose, _ event: inout AuditEvent)
        -> Result<VerifiedToken, RegistrationRefusal>
    {
        let check = verifier.check(proof, for: purpose)
        event.jti = check.facts.jti
        switch check {
        case .unavailable:
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .failure(RegistrationRefusal(.unavailable))
        case let .unverified(refusal, _), let .refused(refusal, _, _):
            event.reason = .proof(refusal)
            return .failure(RegistrationRefusal(.proofRefused(.proof(refusal))))
        case let .valid(verified, _):
            return .success(verified)
        }
    }

    /// A registration refused before the registry was written.
    struct RegistrationRefusal: Error {
        let outcome: Outcome
        init(_ outcome: Outcome) { self.outcome = outcome }
    }

    /// The refusal once `host` registered `host-registrations` keys (new or again) in this window:
    /// counted with the address's other refusals (one `refusals` row per window), not
    /// audited one by one, so that a host in a loop fills no table.
    private func registrationsLimited(_ host: String, _ exchange: Exchange, _ event: inout AuditEvent) -> Outcome? {
        let wait: Int64?
        do { wait = try registrations.retryAfter(host, now: clock.now()) } catch {
            log.message("rate limit counter unavailable: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .unavailable
        }
        guard let wait else { return nil }
        if refusals.add(peer: exchange.address, reason: .registrationsLimited, now: clock.now()) {
            log.message(
                "host \(LogText.clean(host)) registered \(registrations.limit.failures) keys within "
                    + "\(registrations.limit.window) s: its registrations are answered 429 for \(wait) s")
        } else {
            exchange.facts.quiet = true
        }
        event.reason = .code(.registrationsLimited)
        metrics.rateLimited(scope: "host")
        return .tooMany(retryAfter: wait)
    }
}

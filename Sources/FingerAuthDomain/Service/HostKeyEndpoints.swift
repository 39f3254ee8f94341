import FingerAuthCore

/// A host key's registration (`ServiceOperation.registerHostKey`, `POST /v1/hosts/keys`):
/// the host's own key, that later signs its approval requests. Registered like a device key
/// (`register`), with the host's enrollment token and a proof signed by the new key (`typ`
/// fingerauth-host-proof+jwt, `sub` = `iss` = the host), but for no user: there is no
/// policy stage for it, and a host key never logs in (it is not in the keys the verifier
/// looks logins up in).
extension AuthenticatorService {
    /// Registers a host key: host token (`badCredential`), the host's registrations in this
    /// window (`tooMany`, the counter device keys use), body (`malformed`), token's host =
    /// body host (`forbidden`), an RSA key of 2048+ bits (`malformed`), a proof signed by that
    /// key (`proofRefused`), then the registry (`hostKeyRegistered`, new or the same key
    /// again — nothing written —, `conflict` another host's or a device key's kid, or
    /// revoked, `proofRefused` proof replayed). A new key revokes the host's previous one.
    func registerHostKey(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .hostKeyRegister, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let (answer, written) = hostKeyAnswer(request, &event, exchange)
        if case .tooMany = answer, event.reason == .code(.registrationsLimited) {
            exchange.facts.outcome = .deny
            exchange.facts.reason = event.reason
            return .outcomeAfterPause(answer)
        }
        var counted: [WriteItem] = []
        if case .hostKeyRegistered = answer, let host = event.host {
            counted = registrations.failureItems(host, now: clock.now())
        }
        return finish(event, answer, exchange, written: written, counting: counted)
    }

    private func hostKeyAnswer(
        _ request: ServiceRequest, _ event: inout AuditEvent, _ exchange: Exchange
    ) -> (Outcome, Bool) {
        if request.bodyTooLarge || request.body.count > Self.maxBodyBytes {
            event.reason = .code(.bodyTooLarge)
            return (.malformed(.bodyTooLarge), false)
        }
        let tokenHost: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return (answer, false)
        case let .host(host): tokenHost = host
        }
        if let limited = registrationsLimited(tokenHost, exchange, &event) { return (limited, false) }
        let body: JSONValue
        switch Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return (failure.outcome, false)
        case let .success(value):
            body = value
        }
        guard let host = body["host"]?.stringValue, Names.isValidHost(host), let jwkJSON = body["jwk"],
            let proof = body["proof"]?.stringValue
        else {
            event.reason = .code(.invalidRequest)
            return (.malformed(.request), false)
        }
        event.host = host
        guard host.sameBytes(as: tokenHost) else {
            event.reason = .code(.hostMismatch)
            return (.forbidden(.code(.hostMismatch)), false)
        }
        guard jwkJSON["kty"]?.stringValue == "RSA", let jwk = JWK(json: jwkJSON),
            crypto.signatureKey(jwk) != nil, let kid = crypto.thumbprint(of: jwk)
        else {
            event.reason = .code(.invalidJWK)
            return (.malformed(.jwk), false)
        }
        event.kid = kid
        let check = verifier.check(proof, for: .hostProof(jwk: jwk, kid: kid, host: host))
        event.jti = check.facts.jti
        let token: VerifiedToken
        switch check {
        case .unavailable:
            event.outcome = .error
            event.reason = .token(.unavailable)
            return (.unavailable, false)
        case let .unverified(refusal, _), let .refused(refusal, _, _):
            event.reason = .proof(refusal)
            return (.proofRefused(.proof(refusal)), false)
        case let .valid(verified, _):
            token = verified
        }
        let key = RegisteredHostKey(kid: kid, host: host, jwk: jwk, status: .active, created: clock.now())
        let result: HostKeyRegistration
        do {
            result = try store.registerHostKey(
                key, proofJTI: token.jti, keepUntil: token.keepUntil, audit: event, now: clock.now())
        } catch {
            log.message("host key register failed: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return (.unavailable, false)
        }
        event = result.audit(event)
        switch result {
        case .created: return (.hostKeyRegistered(key, new: true), true)
        case .alreadyRegistered:
            let current = (try? store.hostKey(kid: kid)) ?? nil
            return (.hostKeyRegistered(current ?? key, new: false), true)
        case .conflict: return (.conflict(.code(.kidConflict)), true)
        case .revoked: return (.conflict(.token(.keyRevoked)), true)
        case .proofReplayed: return (.proofRefused(.proof(.replayed)), true)
        }
    }
}

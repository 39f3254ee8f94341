import FingerAuthCore

/// A key's registration, revocation and status (`ServiceOperation.register`, `.revoke`,
/// `.keyStatus`). Registering needs the host
/// enrollment token and a proof signed by the new key (`typ` fingerauth-proof+jwt);
/// revoking needs the host token of the key's host, or a revocation token signed by that
/// very key (`typ` fingerauth-revoke+jwt) — a login token is refused there.
extension AuthenticatorService {
    /// Registers a key: host token (`badCredential`), the host's registrations in this
    /// window (`tooMany`), body (`malformed`), token's host = body host (`forbidden`), an
    /// RSA key of 2048+ bits (`malformed`), a proof signed by that key (`proofRefused`), an
    /// attestation (`forbidden`, its reason), the policy (`policyDenied`), then the registry
    /// (`registered`, new or the same key again — nothing written —, `conflict` taken,
    /// revoked or one key too many, `forbidden` another EK than the host's pin,
    /// `proofRefused` proof replayed). Each registration counts against the host's
    /// `host-registrations`.
    func register(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(event: .register, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let (answer, written) = registerAnswer(request, &event, exchange)
        return registrationStep(event, answer, exchange, written: written)
    }

    private func registerAnswer(
        _ request: ServiceRequest, _ event: inout AuditEvent,
        _ exchange: Exchange
    ) -> (Outcome, Bool) {
        let tokenHost: String
        let body: JSONValue
        switch registrationStart(request, &event, exchange) {
        case let .failure(refusal): return (refusal.outcome, false)
        case let .success(start): (tokenHost, body) = start
        }
        if let named = body["user"]?.stringValue, !Names.isValidUser(named) {
            event.claimedUser = LogText.clean(named, limit: 64)
            event.reason = .token(.invalidUserName)
            return (.malformed(.userName(named, field: "user")), false)
        }
        guard let user = body["user"]?.stringValue, Names.isValidUser(user),
            let host = body["host"]?.stringValue, Names.isValidHost(host),
            let jwkJSON = body["jwk"], let proof = body["proof"]?.stringValue
        else {
            event.reason = .code(.invalidRequest)
            return (.malformed(.request), false)
        }
        event.user = user
        event.host = host
        guard host.sameBytes(as: tokenHost) else {
            event.reason = .code(.hostMismatch)
            return (.forbidden(.code(.hostMismatch)), false)
        }
        guard let (jwk, kid) = newKey(jwkJSON, &event) else { return (.malformed(.jwk), false) }
        let token: VerifiedToken
        switch checkedProof(proof, for: .proof(jwk: jwk, kid: kid, user: user, host: host), &event) {
        case let .failure(refusal): return (refusal.outcome, false)
        case let .success(verified): token = verified
        }
        var origin = KeyOrigin.software
        var ek: String?
        if let attestation = body["attestation"] {
            switch attestationCheck(attestation, user: user, host: host, jwk: jwk) {
            case let .refused(answer, reason):
                event.reason = reason
                if answer == .unavailable { event.outcome = .error }
                return (answer, false)
            case let .attested(attestedEK):
                origin = .attestedTPM
                ek = attestedEK
            }
        }
        if settings.requireHardwareKeys && origin != .attestedTPM {
            event.reason = .code(.hardwareKeyRequired)
            return (.forbidden(.code(.hardwareKeyRequired)), false)
        }
        let stage = PolicyRequest(stage: .registration, user: user, host: host, keyKind: origin.policyKind, ek: ek)
        if let denied = policyRefusal(stage, &event) { return (denied, false) }
        let status: KeyStatus = settings.approval == .manual ? .pending : .active
        let key = RegisteredKey(
            kid: kid, user: user, host: host, jwk: jwk, status: status, created: clock.now(),
            kind: origin, ek: ek)
        let result: RegistrationResult
        do {
            result = try store.register(
                key, proofJTI: token.jti, keepUntil: token.keepUntil, audit: event,
                keyLimit: settings.maxKeysPerUserHost, now: clock.now())
        } catch {
            log.message("register failed: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return (.unavailable, false)
        }
        event = Registration.audit(event, result: result, status: key.status)
        switch result {
        case .created:
            return (.registered(registered(kid, status, new: true)), true)
        case .alreadyRegistered:
            let current = (try? store.registeredKey(kid: kid))?.status ?? status
            return (.registered(registered(kid, current, new: false)), true)
        case .conflict: return (.conflict(.code(.kidConflict)), true)
        case .revoked: return (.conflict(.token(.keyRevoked)), true)
        case .proofReplayed: return (.proofRefused(.proof(.replayed)), true)
        case .tooManyKeys: return (.conflict(.code(.tooManyKeys)), true)
        case .ekMismatch:
            log.message(
                "registration for \(LogText.clean(user)) on \(LogText.clean(host)) refused: attested by another EK "
                    + "than the host's pinned one (ek_mismatch)")
            return (.forbidden(.code(.ekMismatch)), true)
        }
    }

    /// Revokes a key: with its host's token (`badCredential`, `unknownKey`, `forbidden` for
    /// another host) or with a revocation token signed by the key itself (the credential, a
    /// JWT: `unverifiedToken` unless it verified, then `tokenRefused` with the reason or
    /// `revoked`). `revoked` when revoked (or, with the host token, already revoked).
    func revoke(kid rawKid: String, _ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .revoke, kid: LogText.clean(rawKid), outcome: .deny,
            peer: LogText.clean(exchange.address), verified: false)
        if let credential = request.credential,
            credential.utf8.filter({ $0 == UInt8(ascii: ".") }).count == 2
        {
            return revokeByKeyHolder(kid: rawKid, jwt: credential, event, exchange)
        }
        let answer = revokeByHost(kid: rawKid, request, &event)
        return finish(event, answer, exchange)
    }

    private func revokeByHost(kid: String, _ request: ServiceRequest, _ event: inout AuditEvent) -> Outcome {
        let tokenHost: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return answer
        case let .host(host): tokenHost = host
        }
        guard TokenVerifier.isWellFormedKid(kid) else {
            event.reason = .token(.unknownKid)
            return .unknownKey
        }
        do {
            guard let key = try store.registeredKey(kid: kid) else {
                event.reason = .token(.unknownKid)
                return .unknownKey
            }
            event.user = key.user
            guard key.host.sameBytes(as: tokenHost) else {
                event.reason = .code(.hostMismatch)
                return .forbidden(.code(.hostMismatch))
            }
            let result = try store.revoke(kid: kid, now: clock.now())
            verifier.keys.forget(kid)
            guard result != .unknown else {
                event.reason = .token(.unknownKid)
                return .unknownKey
            }
            event.outcome = .accept
            if result == .alreadyRevoked { event.reason = .code(.alreadyRevoked) }
            return .revoked
        } catch {
            log.message("revoke failed: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .unavailable
        }
    }

    private func revokeByKeyHolder(kid: String, jwt: String, _ start: AuditEvent, _ exchange: Exchange) -> Step {
        useToken(
            jwt, as: .revocation(kid: kid), event: start, exchange, allowed: [.active, .pending],
            effect: .revokeKey, acceptReason: .code(.keyHolder)
        ) { [self] use in
            switch use {
            case let .answered(row, answer, written):
                return finish(row, answer, exchange, written: written)
            case let .accepted(token, row, _):
                verifier.keys.forget(token.identity.kid)
                return finish(row, .revoked, exchange, written: true)
            }
        }
    }

    /// A key's status for its host (read-only, not audited; a bad host token counts against
    /// the address): `badCredential`, `unknownKey`, `forbidden` (another host's key), or
    /// `keyStatus` with the key as the registry holds it.
    func keyStatus(kid: String, _ request: ServiceRequest, _ exchange: Exchange) -> Step {
        let host: String
        switch hostOfToken(request.credential) {
        case let .failure(failure):
            exchange.facts.outcome = .deny
            exchange.facts.reason = failure.code
            return failure.outcome == .unavailable
                ? .outcome(failure.outcome) : countingFailure(failure.outcome, exchange)
        case let .success(h): host = h
        }
        return .outcome(keyStatusAnswer(kid: kid, host: host))
    }

    private func keyStatusAnswer(kid: String, host: String) -> Outcome {
        guard TokenVerifier.isWellFormedKid(kid) else { return .unknownKey }
        let key: RegisteredKey?
        do { key = try store.registeredKey(kid: kid) } catch { return .unavailable }
        guard let key else { return .unknownKey }
        guard key.host.sameBytes(as: host) else { return .forbidden(.code(.hostMismatch)) }
        return .keyStatus(key)
    }

    /// The counters for monitoring: with `metrics-token` set, only for that credential
    /// (`badCredential` otherwise, counted against the address).
    func metricsAnswer(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        if let expected = settings.metricsToken {
            guard let given = request.credential, ConstantTime.equal(given, expected) else {
                exchange.facts.outcome = .deny
                exchange.facts.reason = .code(.badMetricsToken)
                return countingFailure(.badCredential(.metricsToken), exchange)
            }
        }
        let keys = try? store.keyCounts()
        return .outcome(.metrics(metrics.render(keys: keys, refusalsCounted: refusals.counted, commits: writer.counts)))
    }

    /// The host of the request's host token, recorded in `event` (which is then verified);
    /// or the refusal, with its reason in `event` (`unavailable` marked as an error).
    func authorizedHost(_ request: ServiceRequest, _ event: inout AuditEvent) -> HostCheck {
        switch hostOfToken(request.credential) {
        case let .failure(failure):
            event.reason = failure.code
            if failure.outcome == .unavailable { event.outcome = .error }
            return .refused(failure.outcome)
        case let .success(host):
            event.host = LogText.clean(host)
            event.verified = true
            return .host(host)
        }
    }

    enum HostCheck {
        case host(String)
        case refused(Outcome)
    }

    /// The host of a valid host token, or the refusal (`badCredential`, `unavailable`).
    func hostOfToken(_ credential: String?) -> Result<String, BodyFailure> {
        let unauthorized = BodyFailure(code: .code(.badHostToken), outcome: .badCredential(.hostToken))
        guard let token = credential else { return .failure(unauthorized) }
        do {
            guard let host = try store.host(forToken: token) else { return .failure(unauthorized) }
            return .success(host)
        } catch {
            log.message("token lookup failed: \(error)")
            return .failure(BodyFailure(code: .token(.unavailable), outcome: .unavailable))
        }
    }
}

extension AuthenticatorService {
    /// A registration's outcome: the kid and its status, and the offline-grant keys for the
    /// host to pin when a grant key is configured.
    func registered(_ kid: String, _ status: KeyStatus, new: Bool) -> KeyRegistered {
        KeyRegistered(kid: kid, status: status, new: new, grantKeys: settings.grantSigner.map(grantKeys))
    }
}

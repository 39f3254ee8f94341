import FingerAuthCore

/// `POST /v1/keys` (and its TouchIDAuth-compatible alias `POST /pubkey`, same body, same
/// rules), `DELETE /v1/keys/<kid>` and `GET /v1/keys/<kid>`. Registering needs the host
/// enrollment token and a proof signed by the new key (`typ` fingerauth-proof+jwt);
/// revoking needs the host token of the key's host, or a revocation token signed by that
/// very key (`typ` fingerauth-revoke+jwt) — a login token is refused there.
extension AuthenticatorService {
    /// Registers a key: host token (401), the host's registrations in this window (429),
    /// body (400), token's host = body host (403), an RSA key of 2048+ bits (400), a proof
    /// signed by that key (401), an attestation (403, its reason), the policy (403), then
    /// the registry (201 new, 200 the same key again — nothing written —, 409 taken,
    /// revoked or one key too many, 403 another EK than the host's pin, 401 proof replayed).
    /// Each 201 or 200 counts against the host's `host-registrations`.
    func register(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(event: .register, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let (answer, written) = registerAnswer(request, &event, exchange)
        if answer.status == 429 && event.reason == .code(.registrationsLimited) {
            exchange.summary.outcome = .deny
            exchange.summary.reason = event.reason
            return .answerAfterPause(answer)
        }
        var counted: [WriteItem] = []
        if answer.status == 200 || answer.status == 201, let host = event.host {
            counted = registrations.failureItems(host, now: clock.now())
        }
        return finish(event, answer, exchange, written: written, counting: counted)
    }

    private func registerAnswer(
        _ request: HTTPRequest, _ event: inout AuditEvent,
        _ exchange: Exchange
    ) -> (HTTPResponse, Bool) {
        if request.bodyTooLarge || request.body.count > Self.maxBodyBytes {
            event.reason = .code(.bodyTooLarge)
            return (.error(413, "body_too_large"), false)
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
            return (failure.response, false)
        case let .success(value):
            body = value
        }
        if let named = body["user"]?.stringValue, !Names.isValidUser(named) {
            event.claimedUser = LogText.clean(named, limit: 64)
            event.reason = .token(.invalidUserName)
            return (Names.invalidUser(named, field: "user"), false)
        }
        guard let user = body["user"]?.stringValue, Names.isValidUser(user),
            let host = body["host"]?.stringValue, Names.isValidHost(host),
            let jwkJSON = body["jwk"], let proof = body["proof"]?.stringValue
        else {
            event.reason = .code(.invalidRequest)
            return (.error(400, "invalid_request"), false)
        }
        event.user = user
        event.host = host
        guard host.sameBytes(as: tokenHost) else {
            event.reason = .code(.hostMismatch)
            return (.error(403, "host_mismatch"), false)
        }
        guard jwkJSON["kty"]?.stringValue == "RSA", let jwk = JWK(json: jwkJSON),
            crypto.signatureKey(jwk) != nil, let kid = crypto.thumbprint(of: jwk)
        else {
            event.reason = .code(.invalidJWK)
            return (.error(400, "invalid_jwk"), false)
        }
        event.kid = kid
        let check = verifier.check(proof, for: .proof(jwk: jwk, kid: kid, user: user, host: host))
        event.jti = check.facts.jti
        let token: VerifiedToken
        switch check {
        case .unavailable:
            event.outcome = .error
            event.reason = .token(.unavailable)
            return (.error(503, "unavailable"), false)
        case let .unverified(refusal, _), let .refused(refusal, _, _):
            event.reason = .proof(refusal)
            return (.error(401, AuditReason.proof(refusal).text), false)
        case let .valid(verified, _):
            token = verified
        }
        var origin = KeyOrigin.software
        var ek: String?
        if let attestation = body["attestation"] {
            switch attestationCheck(attestation, user: user, host: host, jwk: jwk) {
            case let .refused(code, reason):
                event.reason = reason
                if code == 503 { event.outcome = .error }
                return (.error(code, reason.text), false)
            case let .attested(attestedEK):
                origin = .attestedTPM
                ek = attestedEK
            }
        }
        if settings.requireHardwareKeys && origin != .attestedTPM {
            event.reason = .code(.hardwareKeyRequired)
            return (.error(403, "hardware_key_required"), false)
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
            return (.error(503, "unavailable"), false)
        }
        event = Registration.audit(event, result: result, status: key.status)
        switch result {
        case .created:
            return (HTTPResponse(status: 201, json: registered(kid, status)), true)
        case .alreadyRegistered:
            let current = (try? store.registeredKey(kid: kid))?.status ?? status
            return (HTTPResponse(status: 200, json: registered(kid, current)), true)
        case .conflict: return (.error(409, "kid_conflict"), true)
        case .revoked: return (.error(409, "key_revoked"), true)
        case .proofReplayed: return (.error(401, "proof_replayed"), true)
        case .tooManyKeys: return (.error(409, "too_many_keys"), true)
        case .ekMismatch:
            log.message(
                "registration for \(LogText.clean(user)) on \(LogText.clean(host)) refused: attested by another EK "
                    + "than the host's pinned one (ek_mismatch)")
            return (.error(403, "ek_mismatch"), true)
        }
    }

    /// 429 once `host` registered `host-registrations` keys (new or again) in this window:
    /// counted with the address's other refusals (one `refusals` row per window), not
    /// audited one by one, so that a host in a loop fills no table.
    private func registrationsLimited(_ host: String, _ exchange: Exchange, _ event: inout AuditEvent) -> HTTPResponse?
    {
        let wait: Int64?
        do { wait = try registrations.retryAfter(host, now: clock.now()) } catch {
            log.message("rate limit counter unavailable: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .error(503, "unavailable")
        }
        guard let wait else { return nil }
        if refusals.add(peer: exchange.address, reason: .registrationsLimited, now: clock.now()) {
            log.message(
                "host \(LogText.clean(host)) registered \(registrations.limit.failures) keys within "
                    + "\(registrations.limit.window) s: its registrations are answered 429 for \(wait) s")
        } else {
            exchange.summary.quiet = true
        }
        event.reason = .code(.registrationsLimited)
        metrics.rateLimited(scope: "host")
        return Self.tooMany(wait)
    }

    /// Revokes a key: with its host's token (401 bad token, 404 unknown kid, 403 other host)
    /// or with a revocation token signed by the key itself (`Authorization: Bearer <JWT>`:
    /// 401 `invalid_token` unless it verified, then 401 with the reason or 204). 204 when
    /// revoked (or, with the host token, already revoked).
    func revoke(kid rawKid: String, _ request: HTTPRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .revoke, kid: LogText.clean(rawKid), outcome: .deny,
            peer: LogText.clean(exchange.address), verified: false)
        if let credential = Self.bearer(request.authorization),
            credential.utf8.filter({ $0 == UInt8(ascii: ".") }).count == 2
        {
            return revokeByKeyHolder(kid: rawKid, jwt: credential, event, exchange)
        }
        let answer = revokeByHost(kid: rawKid, request, &event)
        return finish(event, answer, exchange)
    }

    private func revokeByHost(kid: String, _ request: HTTPRequest, _ event: inout AuditEvent) -> HTTPResponse {
        let tokenHost: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return answer
        case let .host(host): tokenHost = host
        }
        guard TokenVerifier.isWellFormedKid(kid) else {
            event.reason = .token(.unknownKid)
            return .error(404, "unknown_kid")
        }
        do {
            guard let key = try store.registeredKey(kid: kid) else {
                event.reason = .token(.unknownKid)
                return .error(404, "unknown_kid")
            }
            event.user = key.user
            guard key.host.sameBytes(as: tokenHost) else {
                event.reason = .code(.hostMismatch)
                return .error(403, "host_mismatch")
            }
            let result = try store.revoke(kid: kid, now: clock.now())
            verifier.keys.forget(kid)
            guard result != .unknown else {
                event.reason = .token(.unknownKid)
                return .error(404, "unknown_kid")
            }
            event.outcome = .accept
            if result == .alreadyRevoked { event.reason = .code(.alreadyRevoked) }
            return HTTPResponse(status: 204, json: nil)
        } catch {
            log.message("revoke failed: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .error(503, "unavailable")
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
                return finish(row, HTTPResponse(status: 204, json: nil), exchange, written: true)
            }
        }
    }

    /// `GET /v1/keys/<kid>` with this host's token: the key's status as the authenticator
    /// sees it (read-only, not audited; a bad token counts against the address). 401 bad
    /// token, 404 unknown_kid, 403 host_mismatch, 200 `{"kid","user","host","status","created",
    /// "kind","ek"}` (`ek`: the EK that attested the key, or null).
    func keyStatus(kid: String, _ request: HTTPRequest, _ exchange: Exchange) -> Step {
        let host: String
        switch hostForBearer(request.authorization) {
        case let .failure(failure):
            exchange.summary.outcome = .deny
            exchange.summary.reason = failure.code
            return failure.response.status == 401
                ? countingFailure(failure.response, exchange) : .answer(failure.response)
        case let .success(h): host = h
        }
        return .answer(keyStatusAnswer(kid: kid, host: host))
    }

    private func keyStatusAnswer(kid: String, host: String) -> HTTPResponse {
        guard TokenVerifier.isWellFormedKid(kid) else { return .error(404, "unknown_kid") }
        let key: RegisteredKey?
        do { key = try store.registeredKey(kid: kid) } catch { return .error(503, "unavailable") }
        guard let key else { return .error(404, "unknown_kid") }
        guard key.host.sameBytes(as: host) else { return .error(403, "host_mismatch") }
        return HTTPResponse(
            status: 200,
            json: .object([
                ("kid", .string(key.kid)), ("user", .string(key.user)), ("host", .string(key.host)),
                ("status", .string(key.status.rawValue)), ("created", .integer(key.created)),
                ("kind", .string(key.kind.rawValue)), ("ek", key.ek.map(JSONValue.string) ?? .null),
            ]))
    }

    /// `GET /metrics`: with `metrics-token` set, only for `Authorization: Bearer <it>`
    /// (401 otherwise, counted against the address).
    func metricsAnswer(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        if let expected = settings.metricsToken {
            guard let given = Self.bearer(request.authorization), ConstantTime.equal(given, expected) else {
                exchange.summary.outcome = .deny
                exchange.summary.reason = .code(.badMetricsToken)
                return countingFailure(
                    .error(
                        401, "unauthorized",
                        headers: [("WWW-Authenticate", "Bearer realm=\"fingerauthd metrics\"")]), exchange)
            }
        }
        let keys = try? store.keyCounts()
        return .answer(
            HTTPResponse(
                status: 200,
                text: metrics.render(
                    keys: keys, refusalsCounted: refusals.counted,
                    commits: writer.counts),
                contentType: "text/plain; version=0.0.4; charset=utf-8"))
    }

    /// The host of the request's host token, recorded in `event` (which is then verified);
    /// or the refusal, with its reason in `event` (401, or 503 marked as an error).
    func authorizedHost(_ request: HTTPRequest, _ event: inout AuditEvent) -> HostCheck {
        switch hostForBearer(request.authorization) {
        case let .failure(failure):
            event.reason = failure.code
            if failure.response.status == 503 { event.outcome = .error }
            return .refused(failure.response)
        case let .success(host):
            event.host = LogText.clean(host)
            event.verified = true
            return .host(host)
        }
    }

    enum HostCheck {
        case host(String)
        case refused(HTTPResponse)
    }

    /// The host of a valid `Authorization: Bearer <host token>`, or the 401/503 answer.
    func hostForBearer(_ header: String?) -> Result<String, BodyFailure> {
        let unauthorized = BodyFailure(
            code: .code(.badHostToken),
            response: .error(
                401, "bad_host_token", headers: [("WWW-Authenticate", "Bearer realm=\"fingerauthd\"")]))
        guard let token = Self.bearer(header) else { return .failure(unauthorized) }
        do {
            guard let host = try store.host(forToken: token) else { return .failure(unauthorized) }
            return .success(host)
        } catch {
            log.message("token lookup failed: \(error)")
            return .failure(BodyFailure(code: .token(.unavailable), response: .error(503, "unavailable")))
        }
    }
}

extension AuthenticatorService {
    /// A registration's answer: the kid and its status, and the offline-grant keys for the
    /// host to pin when a grant key is configured.
    func registered(_ kid: String, _ status: KeyStatus) -> JSONValue {
        var fields: [(String, JSONValue)] = [("kid", .string(kid)), ("status", .string(status.rawValue))]
        if let signer = settings.grantSigner { fields.append(("grant_keys", grantKeys(signer))) }
        return .object(fields)
    }
}

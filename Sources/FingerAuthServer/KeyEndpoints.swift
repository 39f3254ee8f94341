import FingerAuthCore
import FingerAuthCrypto

/// `POST /v1/keys` (and its TouchIDAuth-compatible alias `POST /pubkey`, same body, same
/// rules) and `DELETE /v1/keys/<kid>`. Registering needs the host enrollment token and a
/// proof signed by the new key; revoking needs the host token of the key's host, or a
/// one-time JWT signed by that very key.
extension AuthenticatorService {
    /// Registers a key: host token (401), body (400), token's host = body host (403), an RSA
    /// key of 2048+ bits (400), a proof signed by that key (401), then the registry
    /// (201 new, 200 same again, 409 taken or revoked).
    func register(_ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        var event = AuditEvent(event: "register", outcome: "deny", peer: LogText.clean(request.peer))
        let answer = registerAnswer(request, &event)
        return finish(event, answer, &summary, path: request.path)
    }

    private func registerAnswer(_ request: HTTPRequest, _ event: inout AuditEvent) -> HTTPResponse {
        if request.bodyTooLarge || request.body.count > Self.maxBodyBytes {
            event.reason = "body_too_large"
            return .error(413, "body_too_large")
        }
        let tokenHost: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return answer
        case let .host(host): tokenHost = host
        }
        let body: JSONValue
        switch Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return failure.response
        case let .success(value):
            body = value
        }
        guard let user = body["user"]?.stringValue, Names.isValidUser(user),
              let host = body["host"]?.stringValue, Names.isValidHost(host),
              let jwkJSON = body["jwk"], let proof = body["proof"]?.stringValue else {
            event.reason = "invalid_request"
            return .error(400, "invalid_request")
        }
        event.user = user
        event.host = host
        guard host == tokenHost else {
            event.reason = "host_mismatch"
            return .error(403, "host_mismatch")
        }
        guard jwkJSON["kty"]?.stringValue == "RSA", let jwk = JWK(json: jwkJSON),
              (try? RSAPublicKey(jwk: jwk)) != nil, let kid = Digest.thumbprint(of: jwk) else {
            event.reason = "invalid_jwk"
            return .error(400, "invalid_jwk")
        }
        event.kid = kid
        let proofResult = verifier.verifyProof(proof, jwk: jwk, user: user, host: host)
        event.jti = proofResult.facts.jti
        if let refusal = proofResult.refusal {
            event.reason = "proof_" + refusal.rawValue
            if refusal == .unavailable {
                event.outcome = "error"
                return .error(503, "unavailable")
            }
            return .error(401, "proof_" + refusal.rawValue)
        }
        let status: KeyStatus = settings.approval == .manual ? .pending : .active
        let key = RegisteredKey(kid: kid, user: user, host: host, jwk: jwk, status: status, created: clock.now())
        let result: RegistrationResult
        do {
            result = try store.register(key)
        } catch {
            log.message("register failed: \(error)")
            event.outcome = "error"
            event.reason = "unavailable"
            return .error(503, "unavailable")
        }
        switch result {
        case .created:
            event.outcome = "accept"
            if status == .pending { event.reason = "pending_approval" }
            return HTTPResponse(status: 201, json: .object([("kid", .string(kid)), ("status", .string(status.rawValue))]))
        case .alreadyRegistered:
            event.outcome = "accept"
            event.reason = "already_registered"
            let current = (try? store.registeredKey(kid: kid))?.status ?? status
            return HTTPResponse(status: 200, json: .object([("kid", .string(kid)), ("status", .string(current.rawValue))]))
        case .conflict:
            event.reason = "kid_conflict"
            return .error(409, "kid_conflict")
        case .revoked:
            event.reason = "key_revoked"
            return .error(409, "key_revoked")
        }
    }

    /// Revokes a key: with its host's token (401 bad token, 404 unknown kid, 403 other host)
    /// or with a JWT signed by the key itself (`Authorization: Bearer <JWT>`, checked like a
    /// login token plus kid = the path's kid: 401 refused, 403 kid_mismatch, 404 unknown).
    /// 204 when revoked (or already revoked).
    func revoke(kid rawKid: String, _ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        var event = AuditEvent(event: "revoke", kid: LogText.clean(rawKid), outcome: "deny",
                               peer: LogText.clean(request.peer))
        let answer = revokeAnswer(kid: rawKid, request, &event)
        return finish(event, answer, &summary, path: request.path)
    }

    private func revokeAnswer(kid: String, _ request: HTTPRequest, _ event: inout AuditEvent) -> HTTPResponse {
        if let jwt = Self.bearerJWT(request.authorization) {
            return revokeByKeyHolder(kid: kid, jwt: jwt, &event)
        }
        let tokenHost: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return answer
        case let .host(host): tokenHost = host
        }
        guard !kid.isEmpty, kid.utf8.count <= 128, TokenVerifier.isPrintableASCII(kid) else {
            event.reason = "unknown_kid"
            return .error(404, "unknown_kid")
        }
        do {
            guard let key = try store.registeredKey(kid: kid) else {
                event.reason = "unknown_kid"
                return .error(404, "unknown_kid")
            }
            event.user = key.user
            guard key.host == tokenHost else {
                event.reason = "host_mismatch"
                return .error(403, "host_mismatch")
            }
            let result = try store.revoke(kid: kid, now: clock.now())
            guard result != .unknown else {
                event.reason = "unknown_kid"
                return .error(404, "unknown_kid")
            }
            event.outcome = "accept"
            if result == .alreadyRevoked { event.reason = "already_revoked" }
            return HTTPResponse(status: 204, json: nil)
        } catch {
            log.message("revoke failed: \(error)")
            event.outcome = "error"
            event.reason = "unavailable"
            return .error(503, "unavailable")
        }
    }

    /// `GET /v1/keys/<kid>` with this host's token: the key's status as the authenticator
    /// sees it (read-only, not audited). 401 bad token, 404 unknown_kid, 403 host_mismatch,
    /// 200 `{"kid","user","host","status","created"}`.
    func keyStatus(kid: String, _ request: HTTPRequest) -> HTTPResponse {
        let host: String
        switch hostForBearer(request.authorization) {
        case let .failure(failure): return failure.response
        case let .success(h): host = h
        }
        guard !kid.isEmpty, kid.utf8.count <= 128, TokenVerifier.isPrintableASCII(kid) else {
            return .error(404, "unknown_kid")
        }
        let key: RegisteredKey?
        do { key = try store.registeredKey(kid: kid) } catch { return .error(503, "unavailable") }
        guard let key else { return .error(404, "unknown_kid") }
        guard key.host == host else { return .error(403, "host_mismatch") }
        return HTTPResponse(status: 200, json: .object([
            ("kid", .string(key.kid)), ("user", .string(key.user)), ("host", .string(key.host)),
            ("status", .string(key.status.rawValue)), ("created", .integer(key.created)),
        ]))
    }

    /// A Bearer credential shaped like a compact JWT (two dots), as opposed to a host token.
    static func bearerJWT(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = String(parts[1].trimmingSpaces)
        return credential.utf8.filter({ $0 == UInt8(ascii: ".") }).count == 2 ? credential : nil
    }

    private func revokeByKeyHolder(kid: String, jwt: String, _ event: inout AuditEvent) -> HTTPResponse {
        let result = verifier.verifyKeyHolder(jwt, kid: kid)
        event.user = result.facts.sub
        event.host = result.facts.iss
        event.jti = result.facts.jti
        if let refusal = result.refusal {
            event.reason = refusal.rawValue
            switch refusal {
            case .unavailable:
                event.outcome = "error"
                return .error(503, "unavailable")
            case .unknownKid: return .error(404, refusal.rawValue)
            case .kidMismatch: return .error(403, refusal.rawValue)
            default: return .error(401, refusal.rawValue)
            }
        }
        do {
            let outcome = try store.revoke(kid: kid, now: clock.now())
            guard outcome != .unknown else {
                event.reason = "unknown_kid"
                return .error(404, "unknown_kid")
            }
            event.outcome = "accept"
            event.reason = outcome == .alreadyRevoked ? "already_revoked" : "key_holder"
            return HTTPResponse(status: 204, json: nil)
        } catch {
            log.message("revoke failed: \(error)")
            event.outcome = "error"
            event.reason = "unavailable"
            return .error(503, "unavailable")
        }
    }

    /// The host of the request's host token, recorded in `event`; or the refusal, with
    /// its reason in `event` (401, or 503 marked as an error).
    private func authorizedHost(_ request: HTTPRequest, _ event: inout AuditEvent) -> HostCheck {
        switch hostForBearer(request.authorization) {
        case let .failure(failure):
            event.reason = failure.code
            if failure.response.status == 503 { event.outcome = "error" }
            return .refused(failure.response)
        case let .success(host):
            event.host = LogText.clean(host)
            return .host(host)
        }
    }

    enum HostCheck {
        case host(String)
        case refused(HTTPResponse)
    }

    /// The host of a valid `Authorization: Bearer <host token>`, or the 401/503 answer.
    private func hostForBearer(_ header: String?) -> Result<String, BodyFailure> {
        let unauthorized = BodyFailure(code: "bad_host_token", response: .error(
            401, "bad_host_token", headers: [("WWW-Authenticate", "Bearer realm=\"fingerauthd\"")]))
        guard let header else { return .failure(unauthorized) }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .failure(unauthorized) }
        let token = String(parts[1].trimmingSpaces)
        do {
            guard let host = try store.host(forToken: token) else { return .failure(unauthorized) }
            return .success(host)
        } catch {
            log.message("token lookup failed: \(error)")
            return .failure(BodyFailure(code: "unavailable", response: .error(503, "unavailable")))
        }
    }
}

import FingerAuthCore
import FingerAuthCrypto

/// `POST /v1/keys` and `DELETE /v1/keys/<kid>`: both need a host enrollment token, and a
/// host acts only on its own keys.
extension AuthenticatorService {
    /// Registers a key: host token (401), body (400), token's host = body host (403), an RSA
    /// key of 2048+ bits (400), a proof signed by that key (401), then the registry
    /// (201 new, 200 same again, 409 taken or revoked).
    func register(_ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        var event = AuditEvent(event: "register", outcome: "deny", peer: LogText.clean(request.peer))
        let answer = registerAnswer(request, &event)
        return finish(event, answer, &summary)
    }

    private func registerAnswer(_ request: HTTPRequest, _ event: inout AuditEvent) -> HTTPResponse {
        if request.bodyTooLarge || request.body.count > Self.maxBodyBytes {
            event.reason = "body_too_large"
            return .error(413, "body_too_large")
        }
        let tokenHost: String
        switch hostForBearer(request.authorization) {
        case let .failure(failure):
            event.reason = failure.code
            if failure.response.status == 503 { event.outcome = "error" }
            return failure.response
        case let .success(host):
            tokenHost = host
        }
        event.host = LogText.clean(tokenHost)
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
        let key = RegisteredKey(kid: kid, user: user, host: host, jwk: jwk, status: .active, created: clock.now())
        let result: RegistrationResult
        do {
            result = try store.register(key)
        } catch {
            log.message("register failed: \(error)")
            event.outcome = "error"
            event.reason = "unavailable"
            return .error(503, "unavailable")
        }
        let ok = HTTPResponse(status: 201, json: .object([("kid", .string(kid)), ("status", .string("active"))]))
        switch result {
        case .created:
            event.outcome = "accept"
            return ok
        case .alreadyRegistered:
            event.outcome = "accept"
            event.reason = "already_registered"
            return HTTPResponse(status: 200, json: .object([("kid", .string(kid)), ("status", .string("active"))]))
        case .conflict:
            event.reason = "kid_conflict"
            return .error(409, "kid_conflict")
        case .revoked:
            event.reason = "key_revoked"
            return .error(409, "key_revoked")
        }
    }

    /// Revokes a key for its own host: 401 bad token, 404 unknown kid, 403 other host, 204.
    func revoke(kid rawKid: String, _ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        var event = AuditEvent(event: "revoke", kid: LogText.clean(rawKid), outcome: "deny",
                               peer: LogText.clean(request.peer))
        let answer = revokeAnswer(kid: rawKid, request, &event)
        return finish(event, answer, &summary)
    }

    private func revokeAnswer(kid: String, _ request: HTTPRequest, _ event: inout AuditEvent) -> HTTPResponse {
        let tokenHost: String
        switch hostForBearer(request.authorization) {
        case let .failure(failure):
            event.reason = failure.code
            if failure.response.status == 503 { event.outcome = "error" }
            return failure.response
        case let .success(host):
            tokenHost = host
        }
        event.host = LogText.clean(tokenHost)
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

import FingerAuthCore
import FingerAuthCrypto

/// `POST /oauth2/token`: the RFC 7523 JWT-bearer grant. The assertion is a login token
/// checked exactly like `/v1/login` (same key binding, lifetime, audience and one-time
/// `jti`). The answer is an opaque random access token (RFC 6749 §5.1); only its SHA-256
/// is stored. Errors are OAuth error bodies (RFC 6749 §5.2), all 400:
/// `invalid_request` (not a form, a parameter missing or repeated),
/// `unsupported_grant_type`, `invalid_grant` (the assertion was refused; the refusal code
/// is in `error_description` and in the audit row).
extension AuthenticatorService {
    /// RFC 7523 §2.1.
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    func tokenGrant(_ request: HTTPRequest, _ summary: inout RequestSummary) -> HTTPResponse {
        var event = AuditEvent(event: "oauth_token", outcome: "deny", peer: LogText.clean(request.peer))
        let answer = tokenAnswer(request, &event)
        return finish(event, answer, &summary, path: request.path)
    }

    private func tokenAnswer(_ request: HTTPRequest, _ event: inout AuditEvent) -> HTTPResponse {
        guard !request.bodyTooLarge, request.body.count <= Self.maxBodyBytes else {
            event.reason = "body_too_large"
            return .error(413, "body_too_large")
        }
        guard FormBody.isFormContentType(request.contentType), let form = FormBody.parse(request.body) else {
            event.reason = "invalid_request"
            return Self.oauthError("invalid_request")
        }
        guard let grant = form["grant_type"] else {
            event.reason = "invalid_request"
            return Self.oauthError("invalid_request")
        }
        guard grant == Self.jwtBearerGrant else {
            event.reason = "unsupported_grant_type"
            return Self.oauthError("unsupported_grant_type")
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            event.reason = "invalid_request"
            return Self.oauthError("invalid_request")
        }
        if let refused = userLimitAnswer(assertion, &event, unavailable: .error(503, "temporarily_unavailable")) {
            return refused
        }
        let result = verifier.verifyLogin(assertion)
        event.user = result.facts.sub
        event.host = result.facts.iss
        event.kid = result.facts.kid
        event.jti = result.facts.jti
        if let refusal = result.refusal {
            event.reason = refusal.rawValue
            if refusal == .unavailable {
                event.outcome = "error"
                return .error(503, "temporarily_unavailable")
            }
            return HTTPResponse(status: 400, json: .object([
                ("error", .string("invalid_grant")), ("error_description", .string(refusal.rawValue)),
            ]))
        }
        guard let random = SecureRandom.bytes(32) else {
            event.outcome = "error"
            event.reason = "no_random"
            return .error(503, "temporarily_unavailable")
        }
        let accessToken = Base64URL.encode(random)
        let now = clock.now()
        do {
            guard let digest = Digest.sha256(Array(accessToken.utf8)) else { throw StoreError("sha256 failed") }
            try store.storeAccessToken(sha256: HostToken.hex(digest), user: result.facts.sub ?? "",
                                       host: result.facts.iss ?? "", kid: result.facts.kid ?? "",
                                       now: now, expires: now + settings.accessTokenTTL)
        } catch {
            log.message("access token store failed: \(error)")
            event.outcome = "error"
            event.reason = "unavailable"
            return .error(503, "temporarily_unavailable")
        }
        event.outcome = "accept"
        return HTTPResponse(status: 200, json: .object([
            ("access_token", .string(accessToken)),
            ("token_type", .string("Bearer")),
            ("expires_in", .integer(settings.accessTokenTTL)),
        ]), headers: [("Pragma", "no-cache")])
    }

    static func oauthError(_ code: String) -> HTTPResponse {
        .error(400, code)
    }
}

import FingerAuthCore

/// `POST /oauth2/token`: the RFC 7523 JWT-bearer grant. The assertion is a login token
/// checked exactly like `/v1/login` (same key binding, lifetime, audience and one-time
/// `jti`). The answer is an opaque random access token (RFC 6749 §5.1); only its SHA-256
/// is stored, in the same transaction that uses up the assertion's jti. Errors are OAuth
/// error bodies (RFC 6749 §5.2), all 400: `invalid_request` (not a form, a parameter
/// missing or repeated), `unsupported_grant_type`, `invalid_grant` — alone for an assertion
/// that did not verify, with the reason in `error_description` for one that did.
///
/// `POST /oauth2/introspect` (RFC 7662) with an enrolled host's token: `{"active":true,…}`
/// while the access token is unexpired and the key it was issued for is still active —
/// revoking the key (or its host) ends its access tokens at once — else `{"active":false}`.
extension AuthenticatorService {
    /// RFC 7523 §2.1.
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    func tokenGrant(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .oauthToken, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        guard !request.bodyTooLarge, request.body.count <= Self.maxBodyBytes else {
            event.reason = .code(.bodyTooLarge)
            return finish(event, .error(413, "body_too_large"), exchange)
        }
        guard FormBody.isFormContentType(request.contentType), let form = FormBody.parse(request.body),
            let grant = form["grant_type"]
        else {
            event.reason = .code(.invalidRequest)
            return finish(event, Self.oauthError("invalid_request"), exchange)
        }
        guard grant == Self.jwtBearerGrant else {
            event.reason = .code(.unsupportedGrantType)
            return finish(event, Self.oauthError("unsupported_grant_type"), exchange)
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            event.reason = .code(.invalidRequest)
            return finish(event, Self.oauthError("invalid_request"), exchange)
        }
        guard let random = crypto.bytes(32), let digest = crypto.sha256(Array(Base64URL.encode(random).utf8)) else {
            event.outcome = .error
            event.reason = .code(.noRandom)
            return finish(event, .error(503, "temporarily_unavailable"), exchange)
        }
        let accessToken = Base64URL.encode(random)
        let expires = clock.now() + settings.accessTokenTTL
        let lifetime = settings.accessTokenTTL
        return useToken(
            assertion, event: event, exchange,
            effect: .accessToken(sha256: Hex.lowercase(digest), expires: expires),
            invalid: Self.oauthError("invalid_grant"),
            refusal: { reason in
                HTTPResponse(
                    status: 400,
                    json: .object([
                        ("error", .string("invalid_grant")), ("error_description", .string(reason.rawValue)),
                    ]))
            },
            unavailable: .error(503, "temporarily_unavailable")
        ) { [self] use in
            switch use {
            case let .answered(row, answer, written):
                return finish(row, answer, exchange, written: written)
            case let .accepted(_, row, _):
                return finish(
                    row,
                    HTTPResponse(
                        status: 200,
                        json: .object([
                            ("access_token", .string(accessToken)),
                            ("token_type", .string("Bearer")),
                            ("expires_in", .integer(lifetime)),
                        ]), headers: [("Pragma", "no-cache")]), exchange, written: true)
            }
        }
    }

    static func oauthError(_ code: String) -> HTTPResponse {
        .error(400, code)
    }

    func introspect(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        switch hostForBearer(request.authorization) {
        case let .failure(failure):
            exchange.summary.outcome = .deny
            exchange.summary.reason = failure.code
            return failure.response.status == 401
                ? countingFailure(failure.response, exchange) : .answer(failure.response)
        case .success:
            break
        }
        guard !request.bodyTooLarge, request.body.count <= Self.maxBodyBytes,
            FormBody.isFormContentType(request.contentType), let form = FormBody.parse(request.body),
            let token = form["token"]
        else {
            return .answer(Self.oauthError("invalid_request"))
        }
        let inactive = HTTPResponse(status: 200, json: .object([("active", .bool(false))]))
        guard token.utf8.count == 43, let digest = crypto.sha256(Array(token.utf8)) else { return .answer(inactive) }
        let state: AccessTokenState?
        do { state = try store.accessToken(sha256: Hex.lowercase(digest)) } catch {
            log.message("access token lookup failed: \(error)")
            return .answer(.error(503, "temporarily_unavailable"))
        }
        // A key whose user breaks the name rule (registered before the rule) vouches for nobody.
        guard let state, state.keyStatus == .active, state.expires > clock.now(), Names.isValidUser(state.user) else {
            return .answer(inactive)
        }
        return .answer(
            HTTPResponse(
                status: 200,
                json: .object([
                    ("active", .bool(true)), ("sub", .string(state.user)), ("host", .string(state.host)),
                    ("kid", .string(state.kid)), ("iat", .integer(state.created)), ("exp", .integer(state.expires)),
                    ("token_type", .string("Bearer")),
                ])))
    }
}

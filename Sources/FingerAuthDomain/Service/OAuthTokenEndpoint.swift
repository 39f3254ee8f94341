import FingerAuthCore

/// The RFC 7523 JWT-bearer grant (`ServiceOperation.accessToken`). The assertion is a login token
/// checked exactly like a login (same key binding, lifetime, audience and one-time `jti`).
/// The outcome is an opaque random access token (RFC 6749 §5.1); only its SHA-256 is
/// stored, in the same transaction that uses up the assertion's jti. A form that is no
/// form, or a parameter missing or repeated, is `malformed(.request)`; another grant type
/// `malformed(.grantType)`; the assertion ends as a login token does (the transport says
/// these in OAuth's words, RFC 6749 §5.2).
///
/// Introspection (RFC 7662) with an enrolled host's token: the token's state while it is
/// unexpired and the key it was issued for is still active — revoking the key (or its
/// host) ends its access tokens at once — else inactive.
extension AuthenticatorService {
    /// RFC 7523 §2.1.
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    func tokenGrant(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .oauthToken, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        guard !request.bodyTooLarge, request.body.count <= Self.maxBodyBytes else {
            event.reason = .code(.bodyTooLarge)
            return finish(event, .malformed(.bodyTooLarge), exchange)
        }
        guard request.media == .form, let form = FormBody.parse(request.body),
            let grant = form["grant_type"]
        else {
            event.reason = .code(.invalidRequest)
            return finish(event, .malformed(.request), exchange)
        }
        guard grant == Self.jwtBearerGrant else {
            event.reason = .code(.unsupportedGrantType)
            return finish(event, .malformed(.grantType), exchange)
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            event.reason = .code(.invalidRequest)
            return finish(event, .malformed(.request), exchange)
        }
        guard let random = crypto.bytes(32), let digest = crypto.sha256(Array(Base64URL.encode(random).utf8)) else {
            event.outcome = .error
            event.reason = .code(.noRandom)
            return finish(event, .unavailable, exchange)
        }
        let accessToken = Base64URL.encode(random)
        let expires = clock.now() + settings.accessTokenTTL
        let lifetime = settings.accessTokenTTL
        return useToken(
            assertion, event: event, exchange,
            effect: .accessToken(sha256: Hex.lowercase(digest), expires: expires)
        ) { [self] use in
            switch use {
            case let .answered(row, answer, written):
                return finish(row, answer, exchange, written: written)
            case let .accepted(_, row, _):
                return finish(row, .accessTokenIssued(token: accessToken, lifetime: lifetime), exchange, written: true)
            }
        }
    }

    func introspect(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        switch hostOfToken(request.credential) {
        case let .failure(failure):
            exchange.facts.outcome = .deny
            exchange.facts.reason = failure.code
            return failure.outcome == .unavailable
                ? .outcome(failure.outcome) : countingFailure(failure.outcome, exchange)
        case .success:
            break
        }
        guard !request.bodyTooLarge, request.body.count <= Self.maxBodyBytes,
            request.media == .form, let form = FormBody.parse(request.body),
            let token = form["token"]
        else {
            return .outcome(.malformed(.request))
        }
        guard token.utf8.count == 43, let digest = crypto.sha256(Array(token.utf8)) else {
            return .outcome(.introspected(nil))
        }
        let state: AccessTokenState?
        do { state = try store.accessToken(sha256: Hex.lowercase(digest)) } catch {
            log.message("access token lookup failed: \(error)")
            return .outcome(.unavailable)
        }
        // A key whose user breaks the name rule (registered before the rule) vouches for nobody.
        guard let state, state.keyStatus == .active, state.expires > clock.now(), Names.isValidUser(state.user) else {
            return .outcome(.introspected(nil))
        }
        return .outcome(.introspected(state))
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthWeb

/// The console's two doors a stranger can reach: sign-in and the one-time setup link.
/// Both hash a password with scrypt (32 MiB, about 100 ms of a core), so nothing reaches
/// the hash unless it got through the sign-in limiter (`SignInLimiter`, which counts the
/// attempt before the hash) and, for setup, named a setup link that is open now (looked up
/// by its SHA-256 first). Refusals a stranger can repeat at will — past the limit, a
/// setup link that opens nothing — are counted into the service's `refusals` row of the
/// address and window, not written a row each; wrong passwords below the limit get a row
/// each, unverified (kept as long as other unverified rows).
extension AdminConsole {
    /// The sign-in form; `token` is the browser's sign-in cookie when it has one (a second
    /// tab, or a request the browser made on its own, must not spoil the first form).
    func signInForm(message: String?, error: String? = nil, status: Int = 200, token given: String? = nil)
        -> HTTPResponse
    {
        let reused = given.flatMap { Base64URL.decode($0)?.count == 24 ? $0 : nil }
        guard let token = reused ?? SecureRandom.bytes(24).map(Base64URL.encode) else {
            return .error(503, "unavailable")
        }
        var body = ""
        if let message { body += "<p class=\"message\">\(ConsoleHTML.escape(message))</p>" }
        if let error { body += "<p class=\"error\" id=\"signin-error\">\(ConsoleHTML.escape(error))</p>" }
        body += """
            <form id="signin" method="post" action="/signin">\(ConsoleHTML.csrfField(token))
            <p><label>Admin <input name="name" autocomplete="username" required></label></p>
            <p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
            <p><button type="submit">Sign in</button></p></form>
            """
        return html(
            status, ConsoleHTML.page(title: "Sign in", admin: nil, csrf: nil, body: body),
            cookies: ["\(Self.signInCookie)=\(token); Path=/signin; Max-Age=600\(cookieFlags)"])
    }

    func signIn(_ request: HTTPRequest, address: String, now: Int64) -> HTTPResponse {
        let fields = ConsoleForms.fields(request.body)
        guard let token = fields["csrf"], let expected = ConsoleForms.cookie(request.cookie, Self.signInCookie),
            ConstantTime.equal(token, expected)
        else {
            return signInForm(message: nil, error: "The sign-in form expired; try again.", status: 403)
        }
        let name = fields["name"] ?? ""
        let password = fields["password"] ?? ""
        let keys = ["address:" + address, "admin:" + name]
        let admitted: Bool
        do { admitted = try limiter.admit(keys, now: now) } catch {
            log.message("console: sign-in limit unavailable: \(error)")
            return signInForm(message: nil, error: "The registry cannot be read right now.", status: 503)
        }
        guard admitted else {
            refuseRepeated(
                address: address, reason: .signinLimited, now: now,
                line: "sign-in as "
                    + "\(LogText.clean(name, limit: 64)) from \(LogText.clean(address)) refused: too many failures")
            return signInForm(message: nil, error: "Too many failed sign-ins; wait a few minutes.", status: 429)
        }
        var event = AuditEvent(
            event: .adminSignin, outcome: .deny, peer: LogText.clean(address),
            verified: false, admin: LogText.clean(name, limit: 64))
        let stored: String?
        do {
            stored = Names.isAdminLookup(name) ? try store.adminPasswordHash(name: name) : nil
        } catch {
            limiter.succeeded(keys, now: now)
            return signInForm(message: nil, error: "The registry cannot be read right now.", status: 503)
        }
        // A name without an account still costs one hash, so that timing does not say which names exist.
        let matched = PasswordHash.verify(password, against: stored ?? PasswordHash.decoy)
        guard let stored, matched, let cookie = sessions.open(admin: name, passwordHash: stored, now: now) else {
            event.reason = .code(.badCredentials)
            auditQuietly(event, now: now)
            return signInForm(message: nil, error: "Wrong admin name or password.", status: 401)
        }
        limiter.succeeded(keys, now: now)
        event.outcome = .accept
        event.verified = true
        auditQuietly(event, now: now)
        return Self.redirect(
            "/overview",
            cookies: [
                "\(Self.sessionCookie)=\(cookie); Path=/\(cookieFlags)",
                "\(Self.signInCookie)=; Path=/signin; Max-Age=0\(cookieFlags)",
            ])
    }

    func setupForm(token: String, error: String?, status: Int = 200) -> HTTPResponse {
        var body = "<p>Choose the password of your console account (at least \(Self.minimumPassword) characters).</p>"
        if let error { body += "<p class=\"error\" id=\"setup-error\">\(ConsoleHTML.escape(error))</p>" }
        body += """
            <form id="setup" method="post" action="/setup"><input type="hidden" name="token" value="\(ConsoleHTML.escape(token))">
            <p><label>Password <input name="password" type="password" autocomplete="new-password" required></label></p>
            <p><label>Again <input name="again" type="password" autocomplete="new-password" required></label></p>
            <p><button type="submit">Set password</button></p></form>
            """
        return html(status, ConsoleHTML.page(title: "Set up your admin account", admin: nil, csrf: nil, body: body))
    }

    /// `GET /setup?token=…`: the form only for a link that is open now; a used, expired or
    /// unknown link says so at once (`closedLink`), before anyone types a password. A read
    /// and no hash, so neither the limiter nor the refusal count is involved.
    func setupPage(token: String, now: Int64) -> HTTPResponse {
        let state: AdminSetupState
        do {
            state = try setupState(token, now: now)
        } catch {
            return setupForm(token: "", error: "The registry cannot be read right now.", status: 503)
        }
        guard case .open = state else { return closedLink(state) }
        return setupForm(token: token, error: nil)
    }

    /// The setup link's form: the limiter, then the link looked up by its SHA-256 (a read),
    /// then the passwords, and only for a link open now the hash and the one write that
    /// consumes the link. A link that opens nothing counts as a failed attempt.
    func setup(_ request: HTTPRequest, address: String, now: Int64) -> HTTPResponse {
        let fields = ConsoleForms.fields(request.body)
        let token = fields["token"] ?? ""
        let password = fields["password"] ?? ""
        let again = fields["again"] ?? ""
        let keys = ["address:" + address]
        let admitted: Bool
        do { admitted = try limiter.admit(keys, now: now) } catch {
            log.message("console: setup limit unavailable: \(error)")
            return setupForm(token: "", error: "The registry cannot be read right now.", status: 503)
        }
        guard admitted else {
            refuseRepeated(
                address: address, reason: .setupRefused, now: now,
                line: "setup from \(LogText.clean(address)) refused: too many failures")
            return setupForm(token: "", error: "Too many failed attempts; wait a few minutes.", status: 429)
        }
        let state: AdminSetupState
        do {
            state = try setupState(token, now: now)
        } catch {
            limiter.succeeded(keys, now: now)
            return setupForm(token: token, error: "The registry cannot be read right now.", status: 503)
        }
        guard case .open = state, let digest = Self.setupDigest(token) else {
            refuseRepeated(
                address: address, reason: .setupRefused, now: now,
                line: "setup from \(LogText.clean(address)) refused: a link that opens nothing")
            return closedLink(state)
        }
        limiter.succeeded(keys, now: now)
        guard password.count >= Self.minimumPassword, password.utf8.count <= PasswordHash.maxPasswordBytes else {
            return setupForm(
                token: token, error: "The password needs at least \(Self.minimumPassword) characters.", status: 400)
        }
        guard password == again else { return setupForm(token: token, error: "The two passwords differ.", status: 400) }
        guard let hash = try? PasswordHash.make(password) else {
            return setupForm(token: token, error: "The password cannot be hashed right now.", status: 503)
        }
        do {
            guard let name = try store.completeAdminSetup(setupDigest: digest, passwordHash: hash, now: now) else {
                // Used, expired or replaced while the password was hashed.
                return closedLink((try? setupState(token, now: now)) ?? .used)
            }
            auditQuietly(
                AuditEvent(event: .adminSetup, outcome: .accept, peer: LogText.clean(address), admin: name), now: now)
            return Self.redirect("/signin?done=1")
        } catch {
            return setupForm(token: token, error: "The registry cannot be written right now.", status: 503)
        }
    }

    /// Where the link of `token` stands; `unknown` without a read when it cannot be one.
    private func setupState(_ token: String, now: Int64) throws(StoreError) -> AdminSetupState {
        guard let digest = Self.setupDigest(token) else { return .unknown }
        return try store.adminSetupState(setupDigest: digest, now: now)
    }

    /// The page of a link that sets no password, without a form: what happened to it and
    /// what to do. 410 Gone for a link that was good once (used, expired), 404 for one no
    /// account holds. Neither names the account nor repeats the link.
    func closedLink(_ state: AdminSetupState) -> HTTPResponse {
        let newLink =
            "ask an admin of this server to run 'fingerauthd admin reset NAME' with your admin name: "
            + "it prints a new setup link"
        let (status, message): (Int, String)
        switch state {
        case .used:
            (status, message) = (
                410,
                "This setup link was used already: the account's password is set. "
                    + "Sign in with it; if it is lost, \(newLink)."
            )
        case .expired:
            (status, message) = (
                410,
                "This setup link has expired: a link lasts \(Self.setupLifetime / 3600) hours. "
                    + "For a new one, \(newLink)."
            )
        case .open, .unknown:
            (status, message) = (
                404,
                "This setup link is not valid: it was not copied whole, or a newer link "
                    + "replaced it. Check the link; for a new one, \(newLink)."
            )
        }
        let body =
            "<p class=\"error\" id=\"setup-error\">\(ConsoleHTML.escape(message))</p>"
            + "<p><a href=\"/signin\">Sign in</a></p>"
        return html(status, ConsoleHTML.page(title: "Setup link closed", admin: nil, csrf: nil, body: body))
    }

    /// The SHA-256 of a setup link's secret (32 bytes, base64url), or nil for anything else.
    static func setupDigest(_ token: String) -> [UInt8]? {
        guard token.utf8.count == 43, let secret = Base64URL.decode(token), secret.count == 32 else { return nil }
        return Digest.sha256(secret)
    }

    /// A refusal a stranger may repeat at will: counted into the address's `refusals` row
    /// of this window (written by the group commit about once a second), and logged on the
    /// first of the window only.
    private func refuseRepeated(address: String, reason: ReasonCode, now: Int64, line: String) {
        if refusals.add(peer: LogText.clean(address), reason: reason, now: now) {
            log.message(
                "console: \(line); more refusals of this address this window are counted "
                    + "in one audit row (event refusals) and not logged one by one")
        }
    }
}

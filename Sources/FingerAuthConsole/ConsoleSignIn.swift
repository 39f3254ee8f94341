import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain

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
    func signInForm(message: String?, error: String? = nil, status: Int = 200, token given: String? = nil) -> HTTPResponse {
        let reused = given.flatMap { Base64URL.decode($0)?.count == 24 ? $0 : nil }
        guard let token = reused ?? SecureRandom.bytes(24).map(Base64URL.encode) else { return .error(503, "unavailable") }
        var body = ""
        if let message { body += "<p class=\"message\">\(ConsoleHTML.escape(message))</p>" }
        if let error { body += "<p class=\"error\" id=\"signin-error\">\(ConsoleHTML.escape(error))</p>" }
        body += """
            <form id="signin" method="post" action="/signin">\(ConsoleHTML.csrfField(token))
            <p><label>Admin <input name="name" autocomplete="username" required></label></p>
            <p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
            <p><button type="submit">Sign in</button></p></form>
            """
        return html(status, ConsoleHTML.page(title: "Sign in", admin: nil, csrf: nil, body: body),
                    cookies: ["\(Self.signInCookie)=\(token); Path=/signin; Max-Age=600\(cookieFlags)"])
    }

    func signIn(_ request: HTTPRequest, address: String, now: Int64) -> HTTPResponse {
        let fields = ConsoleForms.fields(request.body)
        guard let token = fields["csrf"], let expected = ConsoleForms.cookie(request.cookie, Self.signInCookie),
              ConstantTime.equal(token, expected) else {
            return signInForm(message: nil, error: "The sign-in form expired; try again.", status: 403)
        }
        let name = fields["name"] ?? "", password = fields["password"] ?? ""
        let keys = ["address:" + address, "admin:" + name]
        guard limiter.admit(keys, now: now) else {
            refuseRepeated(address: address, reason: .signinLimited, now: now, line: "sign-in as "
                           + "\(LogText.clean(name, limit: 64)) from \(LogText.clean(address)) refused: too many failures")
            return signInForm(message: nil, error: "Too many failed sign-ins; wait a few minutes.", status: 429)
        }
        var event = AuditEvent(event: .adminSignin, outcome: .deny, peer: LogText.clean(address),
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
        guard stored != nil, matched, let cookie = sessions.open(admin: name, now: now) else {
            event.reason = .code(.badCredentials)
            auditQuietly(event, now: now)
            return signInForm(message: nil, error: "Wrong admin name or password.", status: 401)
        }
        limiter.succeeded(keys, now: now)
        event.outcome = .accept
        event.verified = true
        auditQuietly(event, now: now)
        return Self.redirect("/overview", cookies: [
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

    /// The setup link's form: the limiter, then the link looked up by its SHA-256 (a read),
    /// then the passwords, and only for a link open now the hash and the one write that
    /// consumes the link. A link that opens nothing counts as a failed attempt.
    func setup(_ request: HTTPRequest, address: String, now: Int64) -> HTTPResponse {
        let fields = ConsoleForms.fields(request.body)
        let token = fields["token"] ?? "", password = fields["password"] ?? "", again = fields["again"] ?? ""
        let keys = ["address:" + address]
        guard limiter.admit(keys, now: now) else {
            refuseRepeated(address: address, reason: .setupRefused, now: now,
                           line: "setup from \(LogText.clean(address)) refused: too many failures")
            return setupForm(token: "", error: "Too many failed attempts; wait a few minutes.", status: 429)
        }
        let digest = Self.setupDigest(token)
        var open: String?
        do {
            if let digest { open = try store.openAdminSetup(setupDigest: digest, now: now) }
        } catch {
            limiter.succeeded(keys, now: now)
            return setupForm(token: token, error: "The registry cannot be read right now.", status: 503)
        }
        guard open != nil, let digest else {
            refuseRepeated(address: address, reason: .setupRefused, now: now,
                           line: "setup from \(LogText.clean(address)) refused: a link that opens nothing")
            return setupForm(token: "", error: "This setup link is not valid, was used already or has expired; "
                                 + "ask for a new one (fingerauthd admin create).", status: 403)
        }
        limiter.succeeded(keys, now: now)
        guard password.count >= Self.minimumPassword, password.utf8.count <= PasswordHash.maxPasswordBytes else {
            return setupForm(token: token, error: "The password needs at least \(Self.minimumPassword) characters.", status: 400)
        }
        guard password == again else { return setupForm(token: token, error: "The two passwords differ.", status: 400) }
        guard let hash = try? PasswordHash.make(password) else {
            return setupForm(token: token, error: "The password cannot be hashed right now.", status: 503)
        }
        do {
            guard let name = try store.completeAdminSetup(setupDigest: digest, passwordHash: hash, now: now) else {
                return setupForm(token: "", error: "This setup link was used already or has expired; ask for a new one (fingerauthd admin create).", status: 403)
            }
            auditQuietly(AuditEvent(event: .adminSetup, outcome: .accept, peer: "console", admin: name), now: now)
            return Self.redirect("/signin?done=1")
        } catch {
            return setupForm(token: token, error: "The registry cannot be written right now.", status: 503)
        }
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
            log.message("console: \(line); more refusals of this address this window are counted "
                        + "in one audit row (event refusals) and not logged one by one")
        }
    }
}

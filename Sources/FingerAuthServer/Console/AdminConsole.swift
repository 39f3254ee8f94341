import FingerAuthCore
import FingerAuthCrypto
import FingerAuthStore

/// How the admin console behaves (`admin-listen` and its companions).
public struct ConsoleSettings: Sendable {
    /// Sessions end after this long without a request…
    public var idleSeconds: Int64 = 15 * 60
    /// …and this long after sign-in, whatever happens.
    public var absoluteSeconds: Int64 = 8 * 3600
    /// `Secure` on the cookies: the listener speaks TLS.
    public var secureCookies = true

    public init() {}
}

/// The admin console served on the `admin-listen` listener: sign-in (an admin account made
/// with `fingerauthd admin create`), then server-rendered pages — overview, audit log,
/// keys, hosts, policy — and its actions (approve and revoke a key, revoke a host, add,
/// move and remove a policy rule), each audited with the admin's name.
///
/// Every page but sign-in and setup needs a session (else 303 to `/signin`); every POST of
/// a signed-in admin carries the session's CSRF token (else 403); sign-in is a
/// double-submit form and counted against the address and the name. Answers carry a
/// Content-Security-Policy that allows nothing but this listener's stylesheet and forms.
final class AdminConsole: Sendable {
    /// The query parameters any console page reads (the HTTP layer looks up only these).
    static let queryNames = ["user", "host", "event", "outcome", "from", "to", "before", "token", "done", "page"] + policyQueryNames
    static let sessionCookie = "fa_console"
    static let signInCookie = "fa_signin"
    static let minimumPassword = 12

    let store: any AuthStorage
    let clock: any AuthClock
    let log: RequestLog
    let settings: ConsoleSettings
    let sessions: ConsoleSessions
    let limiter = SignInLimiter()

    init(store: any AuthStorage, clock: any AuthClock, log: RequestLog, settings: ConsoleSettings) {
        self.store = store
        self.clock = clock
        self.log = log
        self.settings = settings
        sessions = ConsoleSessions(idleSeconds: settings.idleSeconds, absoluteSeconds: settings.absoluteSeconds)
    }

    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy",
         "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    ]

    /// One console request, answered.
    func answer(_ request: HTTPRequest, address: String) -> HTTPResponse {
        var response = route(request, address: address)
        response.headers += Self.securityHeaders
        return response
    }

    private func route(_ request: HTTPRequest, address: String) -> HTTPResponse {
        let now = clock.now()
        switch (request.method, request.path) {
        case ("GET", "/console.css"):
            return HTTPResponse(status: 200, body: Array(ConsoleHTML.stylesheet.utf8), contentType: "text/css; charset=utf-8")
        case ("GET", "/signin"):
            return signInForm(message: ConsoleForms.query(request, "done") == nil ? nil : "Password set: sign in.",
                              token: ConsoleForms.cookie(request.cookie, Self.signInCookie))
        case ("GET", "/favicon.ico"): return HTTPResponse(status: 204, body: [], contentType: "image/x-icon")
        case ("POST", "/signin"): return signIn(request, address: address, now: now)
        case ("GET", "/setup"): return setupForm(token: ConsoleForms.query(request, "token") ?? "", error: nil)
        case ("POST", "/setup"): return setup(request, now: now)
        default: break
        }
        let cookie = ConsoleForms.cookie(request.cookie, Self.sessionCookie)
        guard let session = sessions.find(cookie, now: now), let cookie else { return Self.redirect("/signin") }
        let signedIn = SignedIn(admin: session.admin, csrf: session.csrf, address: address, now: now)
        if request.method == "POST" {
            let fields = ConsoleForms.fields(request.body)
            guard let token = fields["csrf"], TPMAttestation.constantTimeEqual(Array(token.utf8), Array(session.csrf.utf8)) else {
                log.message("console: \(LogText.clean(session.admin)) posted \(LogText.clean(request.path)) without its CSRF token, refused")
                return html(403, ConsoleHTML.page(title: "Refused", admin: session.admin, csrf: session.csrf,
                                                  body: "<p class=\"error\">This form is not from this session (no or a wrong CSRF token).</p>"))
            }
            switch request.path {
            case "/signout":
                sessions.close(cookie)
                return Self.redirect("/signin", cookies: ["\(Self.sessionCookie)=; Path=/; Max-Age=0\(cookieFlags)"])
            case "/keys/approve", "/keys/revoke":
                return keyAction(request.path == "/keys/approve", kid: fields["kid"] ?? "", signedIn)
            case "/hosts/revoke":
                return hostRevoke(host: fields["host"] ?? "", signedIn)
            case "/policy/add", "/policy/move", "/policy/remove":
                return policyAction(request.path, fields, signedIn)
            default: return html(404, ConsoleHTML.page(title: "Not found", admin: session.admin, csrf: session.csrf, body: ""))
            }
        }
        guard request.method == "GET" else {
            return HTTPResponse(status: 405, body: [], contentType: "text/plain", headers: [("Allow", "GET, POST")])
        }
        do {
            switch request.path {
            case "/", "/overview": return html(200, try overviewPage(signedIn))
            case "/audit": return html(200, try auditPage(request, signedIn))
            case "/audit.csv": return try auditCSV(request)
            case "/keys": return html(200, try keysPage(signedIn, message: nil, page: Self.pageNumber(request)))
            case "/hosts": return html(200, try hostsPage(signedIn, page: Self.pageNumber(request)))
            case "/policy": return html(200, try policyPage(request, signedIn))
            default: return html(404, ConsoleHTML.page(title: "Not found", admin: session.admin, csrf: session.csrf, body: ""))
            }
        } catch {
            log.message("console: \(request.path): \(error)")
            return unavailable(signedIn, writing: false)
        }
    }

    /// Who is acting, for the pages and the audit rows.
    struct SignedIn {
        let admin: String
        let csrf: String
        let address: String
        let now: Int64
    }

    var cookieFlags: String { "; HttpOnly; SameSite=Strict" + (settings.secureCookies ? "; Secure" : "") }

    func html(_ status: Int, _ page: String, cookies: [String] = []) -> HTTPResponse {
        HTTPResponse(status: status, body: Array(page.utf8), contentType: "text/html; charset=utf-8",
                     headers: cookies.map { ("Set-Cookie", $0) })
    }

    /// 503: the registry could not be read (`writing` false) or written.
    func unavailable(_ who: SignedIn, writing: Bool) -> HTTPResponse {
        html(503, ConsoleHTML.page(title: "Unavailable", admin: who.admin, csrf: who.csrf,
                                   body: "<p class=\"error\">The registry cannot be \(writing ? "written" : "read") right now.</p>"))
    }

    static func redirect(_ location: String, cookies: [String] = []) -> HTTPResponse {
        HTTPResponse(status: 303, body: [], contentType: "text/plain",
                     headers: [("Location", location)] + cookies.map { ("Set-Cookie", $0) })
    }

    // MARK: Sign-in and setup

    /// The sign-in form; `token` is the browser's sign-in cookie when it has one (a second
    /// tab, or a request the browser made on its own, must not spoil the first form).
    private func signInForm(message: String?, error: String? = nil, status: Int = 200, token given: String? = nil) -> HTTPResponse {
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

    private func signIn(_ request: HTTPRequest, address: String, now: Int64) -> HTTPResponse {
        let fields = ConsoleForms.fields(request.body)
        guard let token = fields["csrf"], let expected = ConsoleForms.cookie(request.cookie, Self.signInCookie),
              TPMAttestation.constantTimeEqual(Array(token.utf8), Array(expected.utf8)) else {
            return signInForm(message: nil, error: "The sign-in form expired; try again.", status: 403)
        }
        let name = fields["name"] ?? "", password = fields["password"] ?? ""
        let keys = ["address:" + address, "admin:" + name]
        var event = AuditEvent(event: "admin_signin", outcome: "deny", peer: LogText.clean(address), admin: LogText.clean(name, limit: 64))
        if limiter.isBlocked(keys, now: now) {
            // Not an audit row each: a stranger past the limit could otherwise fill the disk.
            log.message("console: sign-in as \(LogText.clean(name, limit: 64)) from \(LogText.clean(address)) refused: too many failures")
            return signInForm(message: nil, error: "Too many failed sign-ins; wait a few minutes.", status: 429)
        }
        let stored: String?
        do {
            stored = Names.isValidUser(name) ? try store.adminPasswordHash(name: name) : nil
        } catch {
            return signInForm(message: nil, error: "The registry cannot be read right now.", status: 503)
        }
        // A name without an account still costs one hash, so that timing does not say which names exist.
        let matched = PasswordHash.verify(password, against: stored ?? PasswordHash.decoy)
        guard stored != nil, matched, let cookie = sessions.open(admin: name, now: now) else {
            limiter.fail(keys, now: now)
            event.reason = "bad_credentials"
            auditQuietly(event, now: now)
            return signInForm(message: nil, error: "Wrong admin name or password.", status: 401)
        }
        event.outcome = "accept"
        auditQuietly(event, now: now)
        return Self.redirect("/overview", cookies: [
            "\(Self.sessionCookie)=\(cookie); Path=/\(cookieFlags)",
            "\(Self.signInCookie)=; Path=/signin; Max-Age=0\(cookieFlags)",
        ])
    }

    private func setupForm(token: String, error: String?, status: Int = 200) -> HTTPResponse {
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

    private func setup(_ request: HTTPRequest, now: Int64) -> HTTPResponse {
        let fields = ConsoleForms.fields(request.body)
        let token = fields["token"] ?? "", password = fields["password"] ?? "", again = fields["again"] ?? ""
        guard password.count >= Self.minimumPassword, password.utf8.count <= PasswordHash.maxPasswordBytes else {
            return setupForm(token: token, error: "The password needs at least \(Self.minimumPassword) characters.", status: 400)
        }
        guard password == again else { return setupForm(token: token, error: "The two passwords differ.", status: 400) }
        guard let secret = Base64URL.decode(token), secret.count == 32, let digest = Digest.sha256(secret),
              let hash = try? PasswordHash.make(password) else {
            return setupForm(token: token, error: "This setup link is not valid.", status: 403)
        }
        do {
            guard let name = try store.completeAdminSetup(setupDigest: digest, passwordHash: hash, now: now) else {
                return setupForm(token: "", error: "This setup link was used already or has expired; ask for a new one (fingerauthd admin create).", status: 403)
            }
            auditQuietly(AuditEvent(event: "admin_setup", outcome: "accept", peer: "console", admin: name), now: now)
            return Self.redirect("/signin?done=1")
        } catch {
            return setupForm(token: token, error: "The registry cannot be written right now.", status: 503)
        }
    }

    func auditQuietly(_ event: AuditEvent, now: Int64) {
        do { try store.audit(event, now: now) } catch { log.message("console: cannot write an audit row: \(error)") }
    }
}

extension PasswordHash {
    /// A well-formed hash of nothing anyone knows: verified against when the admin name
    /// does not exist, so that such a sign-in costs what a real one does.
    static let decoy = "scrypt$15$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
}

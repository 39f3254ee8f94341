import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthWeb

/// How the admin console behaves (`admin-listen` and its companions).
package struct ConsoleSettings: Sendable {
    /// Sessions end after this long without a request…
    package var idleSeconds: Int64 = 15 * 60
    /// …and this long after sign-in, whatever happens.
    package var absoluteSeconds: Int64 = 8 * 3600
    /// `Secure` on the cookies: the listener speaks TLS.
    package var secureCookies = true

    package init() {}
}

/// What the console reads and changes of the registry.
package typealias ConsoleRegistry = KeyRegistry & HostTokens & PolicyStore & AuditLog & ConsoleQueries & AdminAccounts
    & OfflineGrantStore
    & FailureCounts & ApprovalStore

/// The admin console served on the `admin-listen` listener: sign-in (an admin account made
/// with `fingerauthd admin create`), then server-rendered pages — overview, audit log,
/// keys, hosts, policy — and its actions (approve and revoke a key, revoke a host, add,
/// move and remove a policy rule), each audited with the admin's name.
///
/// Every page but sign-in and setup needs a session (else 303 to `/signin`); every POST of
/// a signed-in admin carries the session's CSRF token (else 403); sign-in is a
/// double-submit form and counted against the address and the name (`ConsoleSignIn`). Answers carry a
/// Content-Security-Policy that allows nothing but this listener's stylesheet and forms.
package final class AdminConsole: ConsoleSurface {
    /// The query parameters any console page reads (the HTTP layer looks up only these).
    static let queryNames =
        ["user", "host", "event", "outcome", "from", "to", "before", "token", "done", "page"] + policyQueryNames
    static let sessionCookie = "fa_console"
    static let signInCookie = "fa_signin"
    static let minimumPassword = 12
    /// How long a setup link lasts (`fingerauthd admin create`, `admin reset`), in seconds.
    package static let setupLifetime: Int64 = 24 * 3600

    let store: any ConsoleRegistry
    let clock: any AuthClock
    let log: any ServiceLog
    let settings: ConsoleSettings
    let sessions: ConsoleSessions
    let limiter: SignInLimiter
    /// The service's count of refused requests (one `refusals` row per address and window):
    /// sign-ins past the limit and setup links that open nothing go there, not a row each.
    let refusals: RefusalCounter

    /// The console over `store`, counting the refusals a stranger may repeat at will into
    /// `refusals` (the service's counter, drained by the group commit).
    package init(
        store: any ConsoleRegistry, clock: any AuthClock, log: any ServiceLog, settings: ConsoleSettings,
        refusals: RefusalCounter
    ) {
        self.store = store
        self.clock = clock
        self.log = log
        self.settings = settings
        self.refusals = refusals
        limiter = SignInLimiter(store: store)
        sessions = ConsoleSessions(idleSeconds: settings.idleSeconds, absoluteSeconds: settings.absoluteSeconds)
    }

    static let securityHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    ]

    package var queryNames: [String] { Self.queryNames }

    /// One console request, answered.
    package func answer(_ request: HTTPRequest, address: String) -> HTTPResponse {
        var response = route(request, address: address)
        response.headers += Self.securityHeaders
        return response
    }

    private func route(_ request: HTTPRequest, address: String) -> HTTPResponse {
        let now = clock.now()
        switch (request.method, request.path) {
        case ("GET", "/console.css"):
            return HTTPResponse(
                status: 200, body: Array(ConsoleHTML.stylesheet.utf8), contentType: "text/css; charset=utf-8")
        case ("GET", "/signin"):
            return signInForm(
                message: ConsoleForms.query(request, "done") == nil ? nil : "Password set: sign in.",
                token: ConsoleForms.cookie(request.cookie, Self.signInCookie))
        case ("GET", "/favicon.ico"): return HTTPResponse(status: 204, body: [], contentType: "image/x-icon")
        case ("POST", "/signin"): return signIn(request, address: address, now: now)
        case ("GET", "/setup"): return setupPage(token: ConsoleForms.query(request, "token") ?? "", now: now)
        case ("POST", "/setup"): return setup(request, address: address, now: now)
        default: break
        }
        let cookie = ConsoleForms.cookie(request.cookie, Self.sessionCookie)
        guard let session = sessions.find(cookie, now: now), let cookie else { return Self.redirect("/signin") }
        let signedIn = SignedIn(admin: session.admin, csrf: session.csrf, address: address, now: now)
        if let ended = endIfAccountChanged(session, cookie: cookie, signedIn) { return ended }
        if request.method == "POST" {
            let fields = ConsoleForms.fields(request.body)
            guard let token = fields["csrf"], ConstantTime.equal(token, session.csrf) else {
                log.message(
                    "console: \(LogText.clean(session.admin)) posted \(LogText.clean(request.path)) without its CSRF token, refused"
                )
                return html(
                    403,
                    ConsoleHTML.page(
                        title: "Refused", admin: session.admin, csrf: session.csrf,
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
            case "/hosts/withdraw-grants":
                return grantWithdraw(host: fields["host"] ?? "", signedIn)
            case "/policy/add", "/policy/move", "/policy/remove":
                return policyAction(request.path, fields, signedIn)
            default:
                return html(
                    404, ConsoleHTML.page(title: "Not found", admin: session.admin, csrf: session.csrf, body: ""))
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
            case "/approvals": return html(200, try approvalsPage(request, signedIn))
            case "/policy": return html(200, try policyPage(request, signedIn))
            default:
                return html(
                    404, ConsoleHTML.page(title: "Not found", admin: session.admin, csrf: session.csrf, body: ""))
            }
        } catch {
            log.message("console: \(request.path): \(error)")
            return unavailable(signedIn, writing: false)
        }
    }

    /// Ends `session` when its account was reset or removed since sign-in (its password hash
    /// in the registry is another, or none): 303 to the sign-in form, the cookie cleared.
    /// 503 when the registry cannot be read; nil when the session stands.
    private func endIfAccountChanged(_ session: ConsoleSessions.Session, cookie: String, _ who: SignedIn)
        -> HTTPResponse?
    {
        let current: String?
        do {
            current = try store.adminPasswordHash(name: session.admin)
        } catch {
            log.message("console: cannot read the account of \(LogText.clean(session.admin)): \(error)")
            return unavailable(who, writing: false)
        }
        if let current, ConstantTime.equal(current, session.passwordHash) { return nil }
        sessions.close(cookie)
        log.message("console: a session of \(LogText.clean(session.admin)) ended: the account was reset or removed")
        return Self.redirect("/signin", cookies: ["\(Self.sessionCookie)=; Path=/; Max-Age=0\(cookieFlags)"])
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
        HTTPResponse(
            status: status, body: Array(page.utf8), contentType: "text/html; charset=utf-8",
            headers: cookies.map { ("Set-Cookie", $0) })
    }

    /// 503: the registry could not be read (`writing` false) or written.
    func unavailable(_ who: SignedIn, writing: Bool) -> HTTPResponse {
        html(
            503,
            ConsoleHTML.page(
                title: "Unavailable", admin: who.admin, csrf: who.csrf,
                body: "<p class=\"error\">The registry cannot be \(writing ? "written" : "read") right now.</p>"))
    }

    static func redirect(_ location: String, cookies: [String] = []) -> HTTPResponse {
        HTTPResponse(
            status: 303, body: [], contentType: "text/plain",
            headers: [("Location", location)] + cookies.map { ("Set-Cookie", $0) })
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

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthOffline
import FingerAuthSystem
import FingerAuthTPM

/// The helper's side of the authenticator for one login: one client whose connection is
/// opened (DNS, TCP, TLS, resuming the previous login's TLS session kept under the state
/// directory's `tls/`) by a first request while the finger is awaited and reused for the
/// login's POST, and the token, signed ahead with the device key and sent only after a match.
///
/// `@unchecked Sendable`: two threads use it in turn, never at once. `LoginCommand` hands
/// it to its `BackgroundWork` (warm-up, then the signature made ahead) and touches it
/// again only after that work said so through a pipe: `unreachable` once `warmed` fired
/// (the work writes it before and never after), everything else once the work has ended.
final class AuthenticatorSession: @unchecked Sendable {
    let job: LoginJob
    /// Set once by the main thread, before it tells the background work (`keyLoaded`).
    var key: DeviceKey?
    let clock: Clock
    private let connection: HTTPConnection
    /// Why the authenticator could not be reached; nil once the warm-up got any answer.
    private(set) var unreachable: String? = "not tried"
    /// The failure's kind (`HTTPFailure.Kind`'s name, or `http-503`…) when it is positive
    /// evidence that the network is the problem: only then may an offline grant be used.
    /// nil for an error of this host, a process kept from running, a TLS failure or a wrong
    /// answer: those fall to the password.
    private(set) var offlineCause: String?
    private var signed: (token: String, issuedAt: Int64)?
    /// How long the warm-up request took to be answered (the connection opened and one round
    /// trip), for the login's `stages`; nil when it got no answer.
    private(set) var connectMilliseconds: Int64?

    /// The user's offline grant and log on this host, and the pinned grant keys.
    let book: OfflineBook
    let pins: GrantPins

    /// The warm-up request's bound; its connect bound is the client's 2 s.
    static let warmUpMilliseconds = 3000

    init(job: LoginJob, clock: Clock = SystemClock()) {
        self.job = job
        self.clock = clock
        book = OfflineBook(stateDirectory: job.options.stateDirectory, user: job.user, host: job.issuer)
        pins = GrantPins(stateDirectory: job.options.stateDirectory)
        var settings = HTTPSettings(options: job.options)
        settings.sessionDirectory = job.options.stateDirectory + "/tls"
        connection = HTTPConnection(settings: settings)
    }

    /// Opens the connection with a real request (`GET` of the login URL: an HTTP answer proves
    /// the name resolves, the port answers and the certificate verifies). 502, 503 and 504 — a gateway with no server
    /// behind it, an authenticator whose database is down — count as unreachable: the POST
    /// would get the same, so nobody should be asked for a finger. Of the failures, only the
    /// network's word (`HTTPFailure.isNetworkEvidence`) opens the offline grant. When the user has an
    /// offline grant or offline logins not yet uploaded, the warm-up is the offline sync
    /// (`OfflineSync`) instead, and its answer is applied.
    func prepare() {
        guard let url = job.options.url else {
            unreachable = "no url"
            return
        }
        let bound = connection.settings.totalTimeoutMilliseconds
        connection.settings.totalTimeoutMilliseconds = AuthenticatorSession.warmUpMilliseconds
        let started = MonotonicInstant.now()
        let sync = OfflineSync.url(forLogin: url.text).flatMap { url in OfflineSync.body([book]).map { (url, $0) } }
        let sent =
            sync.map { connection.send(method: "POST", url: $0.0, body: $0.1) }
            ?? connection.send(method: "GET", url: url.text, body: nil)
        switch sent {
        case let .success(response) where (502...504).contains(response.status):
            unreachable = "authenticator answered \(response.status)"
            offlineCause = "http-\(response.status)"
        case let .success(response):
            unreachable = nil
            connectMilliseconds = MonotonicInstant.now().milliseconds &- started.milliseconds
            if sync != nil, let now = GrantClock.read() {
                // An answer while the user holds a grant: the clock has shown this time.
                ClockFloor(stateDirectory: job.options.stateDirectory).raise(to: now.wall)
            }
            if sync != nil, response.status == 200,
                let answer = try? JSONParser(maxBytes: AuthenticatorVerdict.maxBodyBytes, maxDepth: 8).parse(
                    response.body)
            {
                OfflineSync.apply(answer, books: [book], pins: pins)
            }
        case let .failure(failure):
            unreachable = "\(failure.message) [\(failure.kind.rawValue)]"
            if failure.isNetworkEvidence { offlineCause = failure.kind.rawValue }
        }
        connection.settings.totalTimeoutMilliseconds = bound
    }

    /// Signs the token while the finger is awaited, so that after a match only the request
    /// remains. Called after `READY`: the prompt does not wait for the signature. A TPM key
    /// is asked to sign only after the match: no token of it exists before the finger does.
    func signAhead() {
        guard let key, !key.isHardware else { return }
        _ = token()
    }

    /// The token to send now: the one signed ahead while it has at least half its lifetime
    /// left, else a new one with the same `jti`.
    func token() -> String? {
        guard let key else { return nil }
        let now = clock.now()
        if let signed, now - signed.issuedAt <= Int64(job.options.ttlSeconds / 2) { return signed.token }
        var claims = LoginClaims(
            issuer: job.issuer, subject: job.user, audience: job.options.effectiveAudience,
            issuedAt: now, ttlSeconds: job.options.ttlSeconds, jti: job.jti,
            service: job.service, extra: job.options.extraClaims)
        claims.hardwareKey = key.isHardware
        claims.clientService = job.clientService
        let input = CompactJWT.signingInput(header: LoginClaims.header(kid: key.kid), claims: claims.json)
        guard let signature = key.signRS256(input) else { return nil }
        let token = CompactJWT.serialize(signingInput: input, signature: signature)
        signed = (token, now)
        return token
    }

    /// Why no token could be signed; for a TPM key, the TPM's state and the fix.
    var signingFailure: String {
        if case let .hardware(hardware)? = key?.backing, let tpm = hardware as? TPMDeviceKey, let error = tpm.lastError
        {
            return "signing failed: TPM (\(error.kind.rawValue)) \(error.description); \(error.advice)"
        }
        return "signing failed"
    }

    /// POSTs the token, with the helper's times so far (`stages`), and reads the verdict:
    /// only `ok` true with our `sub`, `jti` and `kid`.
    func login(stages: LoginStageReport) -> HelperMessage {
        let jti = job.jti
        let kid = key?.kid ?? ""
        guard let url = job.options.url else {
            return .unavailable(jti: jti, kid: kid, detail: "no url")
        }
        guard let token = token() else { return .unavailable(jti: jti, kid: kid, detail: signingFailure) }
        var report = stages
        report.connect = connectMilliseconds
        let body = JSONEncoding.encodeBytes(.object([("jwt", .string(token)), ("stages", report.json)]))
        switch connection.send(method: "POST", url: url.text, body: body) {
        case let .failure(failure):
            return .unavailable(jti: jti, kid: kid, detail: failure.message)
        case let .success(response):
            switch AuthenticatorVerdict.interpret(
                status: response.status, body: response.body, user: job.user,
                jti: jti, kid: kid)
            {
            case .accepted:
                keepGrant(response.body, kid: kid)
                return .accepted(jti: jti, kid: kid)
            case let .rejected(code, why):
                // An authoritative no: this host's grant for the user ends at once.
                book.drop()
                return .refused(jti: jti, kid: kid, code: code, detail: why)
            case let .unavailable(why): return .unavailable(jti: jti, kid: kid, detail: why)
            }
        }
    }

    /// After an acceptance: the answer's grant keys pinned and its grant kept in place of the
    /// one before; an answer without a grant (the policy gives none, or the authenticator
    /// issues none) drops it.
    private func keepGrant(_ body: [UInt8], kid: String) {
        guard let answer = try? JSONParser(maxBytes: AuthenticatorVerdict.maxBodyBytes, maxDepth: 8).parse(body),
            let token = answer["offline_grant"]?.stringValue, let now = GrantClock.read()
        else {
            book.drop()
            return
        }
        // The keys pinned after this answer, read once: the grant is checked against them.
        let pinned = answer["grant_keys"].flatMap { try? pins.pin($0) } ?? pins.keys()
        if case .failure = book.keep(token, kid: kid, pins: pinned, now: now) { book.drop() }
    }

    /// Whether the user's offline grant allows a login now, asked when the authenticator
    /// could not be reached (before `READY`): the key must be loaded.
    func offlineGrant() -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal> {
        guard let key else { return .failure(GrantRefusal("no device key")) }
        guard let now = GrantClock.read() else { return .failure(GrantRefusal("clocks unreadable")) }
        return book.usable(kid: key.kid, service: job.service, pins: pins.keys(), now: now)
    }

    /// After a match while the authenticator could not be reached: the offline login,
    /// recorded and signed by the device key (a TPM key signs only now, after the finger),
    /// within the grant — or why not.
    func offlineLogin() -> HelperMessage {
        let kid = key?.kid ?? ""
        guard let key, let cause = offlineCause, let now = GrantClock.read() else {
            return .unavailable(jti: job.jti, kid: kid, detail: "authenticator unreachable; offline login impossible")
        }
        switch book.recordLogin(
            kid: key.kid, service: job.service, jti: job.jti, pins: pins.keys(), now: now, sign: key.signRS256)
        {
        case let .success(granted):
            return .offline(jti: job.jti, kid: kid, grant: granted.grant.gid, expires: granted.expires, cause: cause)
        case let .failure(why):
            return .unavailable(jti: job.jti, kid: kid, detail: "authenticator unreachable; offline grant: \(why)")
        }
    }
}

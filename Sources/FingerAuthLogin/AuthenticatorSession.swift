import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
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
    private var signed: (token: String, issuedAt: Int64)?
    /// How long the warm-up request took to be answered (the connection opened and one round
    /// trip), for the login's `stages`; nil when it got no answer.
    private(set) var connectMilliseconds: Int64?

    /// The warm-up request's bound; its connect bound is the client's 2 s.
    static let warmUpMilliseconds = 3000

    init(job: LoginJob, clock: Clock = SystemClock()) {
        self.job = job
        self.clock = clock
        var settings = HTTPSettings(options: job.options)
        settings.sessionDirectory = job.options.stateDirectory + "/tls"
        connection = HTTPConnection(settings: settings)
    }

    /// Opens the connection with a real request (`GET` of the login URL: an HTTP answer proves
    /// the name resolves, the port answers and the certificate verifies). 502, 503 and 504 — a gateway with no server
    /// behind it, an authenticator whose database is down — count as unreachable: the POST
    /// would get the same, so nobody should be asked for a finger.
    func prepare() {
        guard let url = job.options.url else {
            unreachable = "no url"
            return
        }
        let bound = connection.settings.totalTimeoutMilliseconds
        connection.settings.totalTimeoutMilliseconds = AuthenticatorSession.warmUpMilliseconds
        let started = MonotonicInstant.now()
        switch connection.send(method: "GET", url: url.text, body: nil) {
        case let .success(response) where (502...504).contains(response.status):
            unreachable = "authenticator answered \(response.status)"
        case .success:
            unreachable = nil
            connectMilliseconds = MonotonicInstant.now().milliseconds &- started.milliseconds
        case let .failure(failure): unreachable = failure.message
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
            case .accepted: return .accepted(jti: jti, kid: kid)
            case let .rejected(code, why): return .refused(jti: jti, kid: kid, code: code, detail: why)
            case let .unavailable(why): return .unavailable(jti: jti, kid: kid, detail: why)
            }
        }
    }
}

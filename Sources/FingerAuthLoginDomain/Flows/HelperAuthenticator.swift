import FingerAuthCore

/// The helper's side of the authenticator for one login: the warm-up that opens the
/// connection (or syncs the offline book) while the finger is awaited, the token signed
/// ahead with the device key and sent only after a match, the verdict, and the offline
/// login when the authenticator could not be reached.
package final class HelperAuthenticator<
    Channel: AuthenticatorChannel, Book: HelperOfflineBook, Clock: HelperClock, Key: HelperDeviceKey
> {
    package let job: LoginJob
    package let channel: Channel
    package let book: Book
    package let clock: Clock
    /// Set once by the flow, before it says `keyLoaded`; nil again once the verdict is out.
    package var key: Key?
    /// Why the authenticator could not be reached; nil once the warm-up got any answer.
    package private(set) var unreachable: String? = "not tried"
    /// The failure's kind (`AuthenticatorFailure.Kind`'s name, or `http-503`…) when it is
    /// positive evidence that the network is the problem: only then may an offline grant be
    /// used. nil for an error of this host, a process kept from running, a TLS failure or a
    /// wrong answer: those fall to the password.
    package private(set) var offlineCause: String?
    /// How long the warm-up request took to be answered (the connection opened and one round
    /// trip), for the login's `stages`; nil when it got no answer.
    package private(set) var connectMilliseconds: Int64?
    private var signed: (token: String, issuedAt: Int64)?

    /// The warm-up request's bound; its connect bound is the channel's (2 s).
    package static var warmUpMilliseconds: Int { 3000 }

    package init(job: LoginJob, channel: Channel, book: Book, clock: Clock) {
        self.job = job
        self.channel = channel
        self.book = book
        self.clock = clock
    }

    /// Opens the connection with a real request (`GET` of the login URL: an HTTP answer
    /// proves the name resolves, the port answers and the certificate verifies). 502, 503
    /// and 504 — a gateway with no server behind it, an authenticator whose database is down
    /// — count as unreachable: the POST would get the same, so nobody should be asked for a
    /// finger. Of the failures, only the network's word (`isNetworkEvidence`) opens the
    /// offline grant. When the user has an offline grant or offline logins not yet uploaded,
    /// the warm-up is the offline sync instead, and its answer is applied.
    package func warmUp() {
        guard let url = job.options.url else {
            unreachable = "no url"
            return
        }
        let started = clock.monotonicMilliseconds()
        let sync = book.syncRequest(loginURL: url.text)
        let sent = channel.warmUp(
            url: sync?.url ?? url.text, body: sync?.body, boundMilliseconds: Self.warmUpMilliseconds)
        switch sent {
        case let .success(answer) where (502...504).contains(answer.status):
            unreachable = "authenticator answered \(answer.status)"
            offlineCause = "http-\(answer.status)"
        case let .success(answer):
            unreachable = nil
            connectMilliseconds = clock.monotonicMilliseconds() &- started
            if sync != nil, let now = clock.grantClock() {
                // An answer while the user holds a grant: the clock has shown this time.
                book.raiseClockFloor(to: now.wall)
            }
            if sync != nil, answer.status == 200,
                let parsed = try? JSONParser(maxBytes: AuthenticatorVerdict.maxBodyBytes, maxDepth: 8).parse(
                    answer.body)
            {
                book.applySync(parsed)
            }
        case let .failure(failure):
            unreachable = failure.message + " [" + failure.kind.rawValue + "]"
            if failure.isNetworkEvidence { offlineCause = failure.kind.rawValue }
        }
    }

    /// Signs the token while the finger is awaited, so that after a match only the request
    /// remains. A TPM key is asked to sign only after the match: no token of it exists
    /// before the finger does.
    package func signAhead() {
        guard let key, !key.isHardware else { return }
        _ = token()
    }

    /// The token to send now: the one signed ahead while it has at least half its lifetime
    /// left, else a new one with the same `jti`.
    package func token() -> String? {
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

    /// POSTs the token, with the helper's times so far (`stages`), and reads the verdict:
    /// only `ok` true with our `sub`, `jti` and `kid`.
    package func login(stages: LoginStageReport) -> HelperMessage {
        let jti = job.jti
        let kid = key?.kid ?? ""
        guard let url = job.options.url else {
            return .unavailable(jti: jti, kid: kid, detail: "no url")
        }
        guard let token = token() else {
            return .unavailable(jti: jti, kid: kid, detail: key?.signingFailure ?? "signing failed")
        }
        var report = stages
        report.connect = connectMilliseconds
        let body = JSONEncoding.encodeBytes(.object([("jwt", .string(token)), ("stages", report.json)]))
        switch channel.postToken(url: url.text, body: body) {
        case let .failure(failure):
            return .unavailable(jti: jti, kid: kid, detail: failure.message)
        case let .success(answer):
            switch AuthenticatorVerdict.interpret(
                status: answer.status, body: answer.body, user: job.user, jti: jti, kid: kid)
            {
            case .accepted:
                keepGrant(answer.body, kid: kid)
                return .accepted(jti: jti, kid: kid)
            case let .rejected(code, why):
                // An authoritative no: this host's grant for the user ends at once.
                book.drop()
                return .refused(jti: jti, kid: kid, code: code, detail: why)
            case let .unavailable(why): return .unavailable(jti: jti, kid: kid, detail: why)
            }
        }
    }

    /// After an acceptance: the answer's grant kept in place of the one before (checked
    /// against the grant keys the answer pins); an answer without a grant (the policy gives
    /// none, or the authenticator issues none) drops it.
    private func keepGrant(_ body: [UInt8], kid: String) {
        guard let answer = try? JSONParser(maxBytes: AuthenticatorVerdict.maxBodyBytes, maxDepth: 8).parse(body),
            let token = answer["offline_grant"]?.stringValue, let now = clock.grantClock()
        else {
            book.drop()
            return
        }
        if !book.keep(token: token, kid: kid, grantKeys: answer["grant_keys"], now: now) { book.drop() }
    }

    /// Whether the user's offline grant allows a login now, asked when the authenticator
    /// could not be reached (before `READY`): the key must be loaded.
    package func offlineGrant() -> Result<OfflineUse, GrantRefusal> {
        guard let key else { return .failure(GrantRefusal("no device key")) }
        guard let now = clock.grantClock() else { return .failure(GrantRefusal("clocks unreadable")) }
        return book.usable(kid: key.kid, service: job.service, now: now)
    }

    /// After a match while the authenticator could not be reached: the offline login,
    /// recorded and signed by the device key (a TPM key signs only now, after the finger),
    /// within the grant — or why not.
    package func offlineLogin() -> HelperMessage {
        let kid = key?.kid ?? ""
        guard let key, let cause = offlineCause, let now = clock.grantClock() else {
            return .unavailable(jti: job.jti, kid: kid, detail: "authenticator unreachable; offline login impossible")
        }
        switch book.recordLogin(kid: key.kid, service: job.service, jti: job.jti, now: now, sign: key.signRS256) {
        case let .success(use):
            return .offline(jti: job.jti, kid: kid, grant: use.gid, expires: use.expires, cause: cause)
        case let .failure(why):
            return .unavailable(
                jti: job.jti, kid: kid, detail: "authenticator unreachable; offline grant: " + why.description)
        }
    }
}

// `@unchecked Sendable`: two threads use it in turn, never at once. `HelperLoginFlow` hands
// it to its background work (warm-up, then the signature made ahead) and touches it again
// only after that work said so (`HelperBackground`): `unreachable` once the warm-up said
// `warmedUp` (the work writes it before and never after), `key` before it said
// `keyLoaded`, everything else once the work has ended.
extension HelperAuthenticator: @unchecked Sendable {}

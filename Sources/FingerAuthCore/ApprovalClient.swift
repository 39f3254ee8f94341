/// One HTTP exchange as the workstation's approval client needs it; the command line and
/// the watcher plug in the configured HTTP client (CA, pinning, no proxy).
package protocol ApprovalTransport {
    /// `method url` with `Authorization: Bearer bearer` when given; the server may park it
    /// for up to `parkSeconds` (a long poll), so the client's bound must be longer.
    func exchange(_ method: String, _ url: String, body: [UInt8]?, bearer: String?, parkSeconds: Int)
        -> Result<ApprovalReply, ApprovalFailure>
}

/// An answer: status, body and the `Date` header's value.
package struct ApprovalReply: Sendable {
    package var status: Int
    package var body: [UInt8]
    package var date: String?

    package init(status: Int, body: [UInt8], date: String?) {
        self.status = status
        self.body = body
        self.date = date
    }

    /// The answer's `error` member, printable, or nil.
    package var error: String? {
        (try? JSONParser().parse(body))?["error"]?.stringValue.map { TerminalText.escaped(String($0.prefix(80))) }
    }
}

/// Why the authenticator gave no usable answer: a sentence without a secret in it.
package struct ApprovalFailure: Error, Equatable, Sendable {
    package var message: String
    package init(_ message: String) { self.message = message }
}

/// The authenticator's clock as seen from here: the offset learnt from its `server_time`
/// (or its `Date` header), so that a workstation whose own clock is off still signs tokens
/// the authenticator takes (iat/exp by its clock).
package struct ServerClock: Sendable {
    /// Authenticator minus local, in seconds; 0 until learnt.
    package private(set) var offset: Int64 = 0
    package private(set) var learnt = false

    package init() {}

    package mutating func learn(serverTime: Int64, localNow: Int64) {
        offset = serverTime &- localNow
        learnt = true
    }

    /// Seconds since the epoch by the authenticator's clock.
    package func now(localNow: Int64) -> Int64 { localNow &+ offset }

    /// Over a minute off: worth telling the person.
    package var isOff: Bool { offset > 60 || offset < -60 }

    /// `this computer's clock is 600 s behind the authenticator's`.
    package var description: String {
        let magnitude = offset < 0 ? 0 &- offset : offset
        return "this computer's clock is \(magnitude) s \(offset > 0 ? "behind" : "ahead of") the authenticator's"
    }
}

/// How a decision's `POST` ended.
package enum DecisionAnswer: Equatable, Sendable {
    case approved
    case denied
    /// 409: no longer pending (`status` says why: another workstation decided, the host
    /// withdrew it, it expired).
    case closed(status: String)
    /// Any other no: the status and the authenticator's reason.
    case refused(status: Int, reason: String)
}

/// The workstation's half of remote approval, for one user: the watch token (typ
/// `fingerauth-watch+jwt`) and the long poll of `GET /v1/approvals/watch`, and a person's
/// decision (typ `fingerauth-approval+jwt`) `POST`ed to `/v1/approvals/<id>/decision`. Both
/// tokens are signed by the user's device key, issued by this workstation (`host_id`, else
/// the host name: the login token's `iss`) and dated by the authenticator's clock.
package struct ApprovalClient<Transport: ApprovalTransport, Signer: TokenSigner> {
    package let transport: Transport
    package let signer: Signer
    /// `scheme://authority[/prefix]` under which `/v1/approvals` lives.
    package let base: String
    /// An unauthenticated URL whose answer's `Date` tells the authenticator's clock (`/healthz`).
    package let clockURL: String
    package let issuer: String
    package let user: String
    package let audience: String
    package let localClock: any Clock
    package let random: any RandomSource
    package private(set) var clock = ServerClock()
    private var watchToken: (token: String, expires: Int64)?

    /// A watch token lives 5 minutes (fingerauthd's limit) and is used again until 1 minute is left.
    package static var watchSeconds: Int64 { 300 }
    /// A decision lives 30 s (fingerauthd takes at most 60).
    package static var decisionSeconds: Int64 { 30 }
    /// Longest single park asked of the server (its `approval-wait` caps it anyway).
    package static var longestPark: Int { 25 }

    package init(
        transport: Transport, signer: Signer, base: String, clockURL: String, issuer: String, user: String,
        audience: String,
        localClock: any Clock, random: any RandomSource
    ) {
        self.transport = transport
        self.signer = signer
        self.base = base
        self.clockURL = clockURL
        self.issuer = issuer
        self.user = user
        self.audience = audience
        self.localClock = localClock
        self.random = random
    }

    /// Learns the authenticator's clock from the `Date` of a first, unauthenticated answer
    /// (`/healthz`), so that even the first watch token is dated by it.
    package mutating func learnClock() -> Result<Void, ApprovalFailure> {
        let sent = localClock.now()
        switch transport.exchange("GET", clockURL, body: nil, bearer: nil, parkSeconds: 0) {
        case let .failure(failure): return .failure(failure)
        case let .success(reply):
            if let date = reply.date, let server = HTTPDate.parse(date) {
                let received = localClock.now()
                // The server stamped it between `sent` and `received`: the middle of them.
                clock.learn(serverTime: server, localNow: sent &+ (received &- sent) / 2)
            }
            return .success(())
        }
    }

    /// One watch: the user's pending approvals now, or when they change from `have` (an id,
    /// or nil for none), parked by the server for up to `wait` seconds.
    package mutating func watch(have: String?, wait: Int) -> Result<[PendingApproval], ApprovalFailure> {
        guard let token = currentWatchToken() else { return .failure(ApprovalFailure("signing the watch failed")) }
        let park = min(max(wait, 0), Self.longestPark)
        let url = base + "/v1/approvals/watch?have=\(have ?? "-")" + (park > 0 ? "&wait=\(park)" : "")
        switch transport.exchange("GET", url, body: nil, bearer: token, parkSeconds: park) {
        case let .failure(failure): return .failure(failure)
        case let .success(reply):
            guard reply.status == 200 else {
                watchToken = nil
                return .failure(ApprovalFailure(refusalText(reply, of: "the watch")))
            }
            guard let answer = WatchAnswer(body: reply.body) else {
                return .failure(ApprovalFailure("the authenticator's watch answer is unreadable"))
            }
            if let serverTime = answer.serverTime { clock.learn(serverTime: serverTime, localNow: localClock.now()) }
            // The server answers for the token's own user only; anything else is not shown.
            return .success(answer.approvals.filter { $0.user.sameBytes(as: user) })
        }
    }

    /// Waits up to `seconds` (a long poll, renewed) for the user's pending approval; nil
    /// when none came.
    package mutating func awaitPending(seconds: Int) -> Result<PendingApproval?, ApprovalFailure> {
        let start = localClock.now()
        var wait = 0
        while true {
            switch watch(have: nil, wait: wait) {
            case let .failure(failure): return .failure(failure)
            case let .success(approvals):
                if let first = approvals.first { return .success(first) }
            }
            let spent = localClock.now() &- start
            guard spent < Int64(seconds) else { return .success(nil) }
            wait = Int(clamping: Int64(seconds) &- spent)
        }
    }

    /// Signs the person's `choice` on `approval` (bound to its id, nonce, host, service,
    /// client address and code as shown; used once, 30 s) and POSTs it.
    package mutating func decide(_ approval: PendingApproval, _ choice: ApprovalVerdict) -> Result<
        DecisionAnswer, ApprovalFailure
    > {
        guard approval.user.sameBytes(as: user) else {
            return .success(.refused(status: 403, reason: "not_your_approval"))
        }
        let now = clock.now(localNow: localClock.now())
        guard let jti = random.bytes(16) else { return .failure(ApprovalFailure("no random bytes for the jti")) }
        let claims: JSONValue = .object([
            ("iss", .string(issuer)), ("sub", .string(user)), ("aud", .string(audience)), ("iat", .integer(now)),
            ("exp", .integer(now &+ Self.decisionSeconds)), ("jti", .string(Base64URL.encode(jti))),
            ("approval", .string(approval.id)), ("nonce", .string(approval.nonce)), ("host", .string(approval.host)),
            ("service", .string(approval.service)), ("rhost", .string(approval.rhost)),
            ("code", .string(approval.code)), ("caller", .string(approval.caller)),
            ("decision", .string(choice.rawValue)),
        ])
        guard let token = sign(claims, typ: TokenType.approvalDecision) else {
            return .failure(ApprovalFailure("signing the decision failed"))
        }
        let body = JSONEncoding.encodeBytes(.object([("jwt", .string(token))]))
        let url = base + "/v1/approvals/\(approval.id)/decision"
        switch transport.exchange("POST", url, body: body, bearer: nil, parkSeconds: 0) {
        case let .failure(failure): return .failure(failure)
        case let .success(reply):
            let json = try? JSONParser().parse(reply.body)
            switch (reply.status, json?["status"]?.stringValue) {
            case (200, "approved"): return .success(.approved)
            case (200, "denied"): return .success(.denied)
            case (409, let status?) where reply.error == "approval_closed":
                return .success(.closed(status: TerminalText.escaped(String(status.prefix(16)))))
            default:
                return .success(.refused(status: reply.status, reason: reply.error ?? "no reason given"))
            }
        }
    }

    /// The watch token in use, or a new one (dated by the authenticator's clock).
    private mutating func currentWatchToken() -> String? {
        let now = clock.now(localNow: localClock.now())
        if let kept = watchToken, kept.expires &- now > 60 { return kept.token }
        guard let jti = random.bytes(16) else { return nil }
        let claims: JSONValue = .object([
            ("iss", .string(issuer)), ("sub", .string(user)), ("aud", .string(audience)), ("iat", .integer(now)),
            ("exp", .integer(now &+ Self.watchSeconds)), ("jti", .string(Base64URL.encode(jti))),
        ])
        guard let token = sign(claims, typ: TokenType.watch) else { return nil }
        watchToken = (token, now &+ Self.watchSeconds)
        return token
    }

    private func sign(_ claims: JSONValue, typ: String) -> String? {
        let header: JSONValue = .object([
            ("alg", .string("RS256")), ("typ", .string(typ)), ("kid", .string(signer.kid)),
        ])
        let input = CompactJWT.signingInput(header: header, claims: claims)
        guard let signature = signer.signRS256(input) else { return nil }
        return CompactJWT.serialize(signingInput: input, signature: signature)
    }

    /// A refusal in words: `the watch: 401 key_revoked`, with a hint for a clock refusal.
    private func refusalText(_ reply: ApprovalReply, of what: String) -> String {
        let reason = reply.error ?? "no reason given"
        var text = "refused by the authenticator: \(what): \(reply.status) \(reason)"
        if ["expired", "iat_in_future", "not_yet_valid"].contains(reason) {
            text += " (\(clock.description); synchronise it: timedatectl set-ntp true)"
        }
        return text
    }
}

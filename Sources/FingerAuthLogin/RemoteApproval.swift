import CSpawn
import CSystem
import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth-login --login` for a request with `approve_rhost`/`approve_tty`
/// (`remote = approve`, docs/ARCHITECTURE.md "Remote approval"): no reader, no prints, no
/// device key here. It asks the authenticator, signed by this host's key, that the user
/// approve the login on their own workstation (`POST /v1/approvals`, the module's `jti` as
/// the request's), says `APPROVAL <code> <workstations>`, and waits (short long polls of
/// `GET /v1/approvals/<id>`) until the person decides, the request expires or the module
/// asks it to end (SIGTERM, also its parent-death signal): then it withdraws the request
/// (`DELETE`), so that no workstation keeps showing a login nobody waits for. An approval
/// is `MATCH remote:<workstation>` and `ACCEPTED <jti> <kid>`, then, on the caller's own
/// terminal, the newline that ends the pending prompt.
enum RemoteApproval {
    /// Seconds of one long poll: how soon a withdrawal is noticed while waiting.
    static let pollSeconds = 1

    static func run(_ job: LoginJob, origin: ApprovalAsk) -> HelperExit.Code {
        // The module's deadline for the whole wait is the timeout plus grace; this bounds the
        // helper itself (SIGALRM's default action ends it), whatever the network does.
        alarm(UInt32(clamping: job.options.approveTimeoutSeconds + 12))
        _ = fa_catch_terminate()
        var asker: Asker
        switch Asker.make(job) {
        case let .success(made): asker = made
        case let .failure(stop):
            LineOutput.emit(.fail(stop.reason, detail: stop.text))
            return .failed
        }
        let opened: Opened
        switch asker.open(origin) {
        case let .success(answer): opened = answer
        case let .failure(ended):
            LineOutput.emit(ended.message)
            return .failed
        }
        LineOutput.emit(.approval(code: opened.code, workstations: opened.workstations))
        let deadline = MonotonicInstant.now().adding(milliseconds: Int64(job.options.approveTimeoutSeconds) * 1000)
        while true {
            if fa_terminate_requested() != 0 {
                asker.withdraw(opened.id)
                return .failed
            }
            guard deadline.remaining > 0 else {
                asker.withdraw(opened.id)
                LineOutput.emit(
                    .refused(jti: job.jti, kid: "-", code: .approvalTimedOut, detail: "nobody approved in time"))
                endPrompt(job)
                return .failed
            }
            guard let state = asker.state(opened.id) else {
                // A failed poll (the network): again, until the deadline; a withdrawal at once.
                if fa_terminate_requested() == 0 { usleep(200_000) }
                continue
            }
            switch state.status {
            case "pending": continue
            case "approved":
                let workstation = state.workstation ?? "-"
                LineOutput.emit(.match(finger: "remote:" + workstation))
                LineOutput.emit(.accepted(jti: job.jti, kid: state.kid ?? "-"))
                if let terminal = job.terminal { TerminalInjector.inject(terminal) }
                return .accepted
            case "denied":
                LineOutput.emit(
                    .refused(
                        jti: job.jti, kid: state.kid ?? "-", code: .approvalDenied,
                        detail: "\"Not me\" on \(state.workstation ?? "the workstation")"))
                endPrompt(job)
                return .failed
            case "expired":
                LineOutput.emit(
                    .refused(jti: job.jti, kid: "-", code: .approvalTimedOut, detail: "nobody approved in time"))
                endPrompt(job)
                return .failed
            default:
                LineOutput.emit(.unavailable(jti: job.jti, kid: "-", detail: "the request was \(state.status)"))
                endPrompt(job)
                return .failed
            }
        }
    }

    /// Ends the pending prompt on the caller's own terminal (a newline, as an approval does)
    /// once the approval has ended otherwise: the person goes on to the password at once,
    /// with the reason, instead of pressing Enter for a decision that came. After the line,
    /// so that the module reads the reason with the empty answer.
    static func endPrompt(_ job: LoginJob) {
        if let terminal = job.terminal { TerminalInjector.inject(terminal) }
    }

    /// What the authenticator answered to the request.
    struct Opened {
        let id: String
        let code: String
        let workstations: String
    }

    /// An approval as the host reads it.
    struct State {
        let status: String
        let workstation: String?
        let kid: String?
    }

    /// The line that ends the login before the prompt.
    struct Ended: Error {
        let message: HelperMessage
        init(_ message: HelperMessage) { self.message = message }
    }

    struct Stop: Error {
        let reason: HelperFailure
        let text: String
    }

    /// This host's key and its connection to the authenticator, for one request.
    struct Asker {
        let job: LoginJob
        let key: DeviceKey
        let connection: HTTPConnection
        let base: String
        let audience: String
        /// The authenticator's clock minus this host's, learnt from its answer: every later
        /// token is dated by the authenticator's clock.
        var offset: Int64 = 0

        static func make(_ job: LoginJob) -> Result<Asker, Stop> {
            guard let url = job.options.url?.text else { return .failure(Stop(reason: .usage, text: "no url")) }
            let path = StatePaths.hostKey(root: job.options.stateDirectory)
            let key: DeviceKey
            switch DeviceKeyLoader(tcti: job.options.tpmTCTI).load(path) {
            case let .success(loaded): key = loaded
            case let .failure(why):
                return .failure(
                    Stop(
                        reason: .key,
                        text: "this host has no usable host key (\(why.message)); fingerauth host register makes one"))
            }
            var settings = HTTPSettings(options: job.options)
            settings.sessionDirectory = job.options.stateDirectory + "/tls"
            settings.totalTimeoutMilliseconds = (pollSeconds + 4) * 1000
            let base = url.hasSuffix("/v1/login") ? String(url.dropLast("/v1/login".count)) : url
            return .success(
                Asker(
                    job: job, key: key, connection: HTTPConnection(settings: settings), base: base,
                    audience: job.options.audience ?? url))
        }

        /// `POST /v1/approvals`; the answer, or the line that ends the login.
        mutating func open(_ origin: ApprovalAsk) -> Result<Opened, Ended> {
            let jti = job.jti
            guard let nonce = SystemRandom().bytes(18).map(Base64URL.encode) else {
                return .failure(Ended(.fail(.usage, detail: "no random bytes")))
            }
            let now = SystemClock().now()
            let lifetime = Int64(min(job.options.approveTimeoutSeconds, 55) + 5)
            var members: [(String, JSONValue)] = [
                ("iss", .string(job.issuer)), ("sub", .string(job.user)), ("aud", .string(audience)),
                ("iat", .integer(now)), ("exp", .integer(now + lifetime)), ("jti", .string(jti)),
                ("service", .string(job.service)), ("rhost", .string(origin.clientAddress)),
                ("tty", .string(origin.terminal)), ("nonce", .string(nonce)),
            ]
            if !origin.caller.isEmpty { members.append(("caller", .string(origin.caller))) }
            let claims = JSONValue.object(members)
            guard let token = sign(claims, type: TokenType.approvalRequest) else {
                return .failure(Ended(.fail(.key, detail: "the host key could not sign")))
            }
            let body = JSONEncoding.encodeBytes(.object([("jwt", .string(token))]))
            switch connection.send(
                method: "POST", url: base + "/v1/approvals", body: body, headers: ["Content-Type: application/json"])
            {
            case let .failure(failure):
                return .failure(Ended(.fail(.unreachable, detail: failure.message)))
            case let .success(response):
                let json = try? JSONParser().parse(response.body)
                guard response.status == 201, let json, let id = json["id"]?.stringValue,
                    let code = json["code"]?.stringValue
                else {
                    let error = json?["error"]?.stringValue
                    if response.status >= 500 {
                        return .failure(Ended(.unavailable(jti: jti, kid: key.kid, detail: "HTTP \(response.status)")))
                    }
                    return .failure(
                        Ended(
                            .refused(
                                jti: jti, kid: key.kid, code: RefusalCode(status: response.status, error: error),
                                detail: "HTTP \(response.status) \(error ?? "")")))
                }
                if let serverTime = json["server_time"]?.int64Value { offset = serverTime - now }
                let names = json["workstations"]?.arrayValue?.compactMap { $0.stringValue } ?? []
                return .success(
                    Opened(id: id, code: code, workstations: names.isEmpty ? "-" : names.joined(separator: ",")))
            }
        }

        /// The approval's state after one long poll; nil when the poll failed.
        func state(_ id: String) -> State? {
            guard let bearer = hostCall(id) else { return nil }
            let url = base + "/v1/approvals/" + id + "?wait=\(pollSeconds)"
            // The module's SIGTERM (a password typed, Ctrl-C) ends the poll at once: the
            // withdrawal must not wait for the long poll's second, and the module waits for it.
            connection.settings.abandon = { fa_terminate_requested() != 0 }
            defer { connection.settings.abandon = nil }
            guard
                case let .success(response) = connection.send(
                    method: "GET", url: url, body: nil, headers: ["Authorization: Bearer " + bearer]),
                response.status == 200, let json = try? JSONParser().parse(response.body),
                let status = json["status"]?.stringValue
            else { return nil }
            return State(status: status, workstation: json["workstation"]?.stringValue, kid: json["kid"]?.stringValue)
        }

        /// `DELETE /v1/approvals/<id>`: nobody waits for it any more. One try, bounded.
        func withdraw(_ id: String) {
            guard let bearer = hostCall(id) else { return }
            _ = connection.send(
                method: "DELETE", url: base + "/v1/approvals/" + id, body: nil,
                headers: ["Authorization: Bearer " + bearer])
        }

        /// A `fingerauth-host+jwt` for approval `id`, dated by the authenticator's clock.
        private func hostCall(_ id: String) -> String? {
            guard let jti = SystemRandom().bytes(16).map(Base64URL.encode) else { return nil }
            let now = SystemClock().now() + offset
            let claims = JSONValue.object([
                ("iss", .string(job.issuer)), ("sub", .string(job.issuer)), ("aud", .string(audience)),
                ("iat", .integer(now)), ("exp", .integer(now + 30)), ("jti", .string(jti)),
                ("approval", .string(id)),
            ])
            return sign(claims, type: TokenType.hostCall)
        }

        private func sign(_ claims: JSONValue, type: String) -> String? {
            let input = CompactJWT.signingInput(header: LoginClaims.header(kid: key.kid, typ: type), claims: claims)
            guard let signature = key.signRS256(input) else { return nil }
            return CompactJWT.serialize(signingInput: input, signature: signature)
        }
    }
}

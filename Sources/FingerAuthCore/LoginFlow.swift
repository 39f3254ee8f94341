/// Who is logging in, as PAM told the module.
public struct LoginRequest: Sendable {
    public var user: String
    public var service: String
    /// `PAM_RHOST`, when the application set it.
    public var remoteHost: String?
    /// True when the application runs inside an SSH session (SSH_CONNECTION and friends).
    public var inSSHSession: Bool
    /// `PAM_SILENT`: no explanations when the fingerprint path fails. The scan's own
    /// prompts ("Place your finger…", "No match…") are still shown: sudo always passes
    /// PAM_SILENT, and a person cannot use a reader nobody asked them to touch
    /// (pam_fprintd prompts under PAM_SILENT too).
    public var silent: Bool

    public init(user: String, service: String, remoteHost: String? = nil, inSSHSession: Bool = false, silent: Bool = false) {
        self.user = user
        self.service = service
        self.remoteHost = remoteHost
        self.inSSHSession = inSSHSession
        self.silent = silent
    }

    /// Any `PAM_RHOST` (sshd sets it even for 127.0.0.1: nobody is known to sit at this
    /// host's reader), or an SSH session.
    public var isRemote: Bool {
        inSSHSession || !(remoteHost ?? "").isEmpty
    }
}

/// What the module returns, and what its one log line says.
public struct LoginOutcome: Equatable, Sendable {
    public var code: PAMCode
    /// Short, secret-free reason for the log line.
    public var reason: String
    public var kid: String?
    public var jti: String?
    public var finger: String?

    public init(_ code: PAMCode, _ reason: String, kid: String? = nil, jti: String? = nil, finger: String? = nil) {
        self.code = code
        self.reason = reason
        self.kid = kid
        self.jti = jti
        self.finger = finger
    }
}

/// The login decision (DESIGN steps 3–7) in plain Swift: deny by default, every path picks
/// its own PAM code, and only a matched finger confirmed by the authenticator succeeds.
public struct LoginFlow {
    public let scanner: FingerprintScanner
    public let store: EnrollmentStore
    public let transport: AuthenticatorTransport
    public let conversation: Conversation
    public let clock: Clock
    public let random: RandomSource
    public let users: UserDatabase
    /// Host name for `iss` when `host_id` is not set.
    public let hostName: String
    /// Step lines for the `debug` log (names, codes and ids only; never a key or a token).
    public var trace: (String) -> Void = { _ in }

    public init(scanner: FingerprintScanner, store: EnrollmentStore, transport: AuthenticatorTransport,
                conversation: Conversation, clock: Clock, random: RandomSource, users: UserDatabase, hostName: String) {
        self.scanner = scanner
        self.store = store
        self.transport = transport
        self.conversation = conversation
        self.clock = clock
        self.random = random
        self.users = users
        self.hostName = hostName
    }

    /// Texts the person at the keyboard sees.
    public enum Text {
        public static let placeFinger = "Place your finger on the fingerprint reader"
        public static func noMatch(left: Int) -> String { "No match, try again (\(left) left)" }
        public static let tooManyTries = "Fingerprint not recognised; too many tries"
        public static let readerUnavailable = "Fingerprint login unavailable"
        public static let authenticatorUnavailable = "Fingerprint login unavailable: authenticator not reachable"
        public static let refused = "Fingerprint login refused by the authenticator"
    }

    public func authenticate(_ request: LoginRequest, options: Options) -> LoginOutcome {
        if options.disabled { return LoginOutcome(.ignore, "disabled") }
        guard UserName.isValid(request.user) else { return LoginOutcome(.userUnknown, "user name not acceptable") }
        guard users.exists(request.user) else { return LoginOutcome(.userUnknown, "user unknown to the system") }
        trace("user \(request.user), service \(request.service), remote host \(request.remoteHost ?? "-"), ssh session \(request.inSSHSession)")
        if request.isRemote && !options.allowRemote { return LoginOutcome(.ignore, "remote session skipped") }
        switch store.enrollment(of: request.user, options: options) {
        case .notEnrolled: return LoginOutcome(.ignore, "user not enrolled")
        case let .unsafe(why): return say(LoginOutcome(.authInfoUnavailable, why), Text.readerUnavailable, request)
        case .enrolled: break
        }
        let signer: TokenSigner
        switch store.signer(for: request.user, options: options) {
        case let .success(s): signer = s
        case let .failure(e): return say(LoginOutcome(.authInfoUnavailable, "device key: " + e.message), Text.readerUnavailable, request)
        }

        trace("enrolled; device key \(signer.kid); starting \(options.scanHelper)")
        let scanned = scanner.scan(user: request.user, options: options) { message in
            trace("scan helper: \(message.line)")
            return relay(message, request)
        }
        trace("scan outcome: \(scanned)")
        let finger: String
        switch scanned {
        case let .matched(f): finger = f
        case .tooManyTries: return say(LoginOutcome(.maxTries, "no match after \(options.maxTries) tries", kid: signer.kid), Text.tooManyTries, request)
        case let .unavailable(why): return say(LoginOutcome(.authInfoUnavailable, why, kid: signer.kid), Text.readerUnavailable, request)
        case .conversationFailed: return LoginOutcome(.conversationError, "conversation failed", kid: signer.kid)
        }

        guard let jtiBytes = random.bytes(16), jtiBytes.count == 16 else {
            return LoginOutcome(.systemError, "no random bytes for jti", kid: signer.kid, finger: finger)
        }
        let claims = LoginClaims(issuer: options.hostID ?? hostName, subject: request.user,
                                 audience: options.effectiveAudience, issuedAt: clock.now(),
                                 ttlSeconds: options.ttlSeconds, jti: Base64URL.encode(jtiBytes),
                                 service: request.service, extra: options.extraClaims)
        let input = CompactJWT.signingInput(header: LoginClaims.header(kid: signer.kid), claims: claims.json)
        guard let signature = signer.signRS256(input) else {
            return say(LoginOutcome(.authInfoUnavailable, "signing failed", kid: signer.kid, jti: claims.jti, finger: finger),
                       Text.readerUnavailable, request)
        }
        let token = CompactJWT.serialize(signingInput: input, signature: signature)
        trace("token signed: jti \(claims.jti), iat \(claims.issuedAt), exp \(claims.expiresAt), aud \(claims.audience)")
        let body = JSONEncoding.encodeBytes(.object([("jwt", .string(token))]))

        var outcome = LoginOutcome(.authInfoUnavailable, "", kid: signer.kid, jti: claims.jti, finger: finger)
        let answer = transport.post(json: body, options: options)
        switch answer {
        case let .answered(status, bytes): trace("authenticator answered \(status) (\(bytes.count) bytes)")
        case let .failed(why): trace("authenticator not reached: \(why)")
        }
        switch answer {
        case let .failed(why):
            outcome.reason = why
            return say(outcome, Text.authenticatorUnavailable, request)
        case let .answered(status, answer):
            switch AuthenticatorVerdict.interpret(status: status, body: answer, user: request.user, jti: claims.jti) {
            case .accepted:
                outcome.code = .success
                outcome.reason = "finger \(finger) matched, authenticator accepted"
                return outcome
            case let .rejected(why):
                outcome.code = .authError
                outcome.reason = why
                return say(outcome, Text.refused, request)
            case let .unavailable(why):
                outcome.reason = why
                return say(outcome, Text.authenticatorUnavailable, request)
            }
        }
    }

    private func relay(_ message: ScanMessage, _ request: LoginRequest) -> Bool {
        switch message {
        case .ready: return conversation.info(Text.placeFinger)
        case let .retry(hint): return conversation.info(hint)
        case let .noMatch(left) where left > 0: return conversation.info(Text.noMatch(left: left))
        case .noMatch, .match, .fail: return true
        }
    }

    /// Shows `text` (unless silent) and returns `outcome`; a failing conversation does not
    /// change a failure into anything else.
    private func say(_ outcome: LoginOutcome, _ text: String, _ request: LoginRequest) -> LoginOutcome {
        if !request.silent { _ = conversation.error(text) }
        return outcome
    }
}

/// The parts the login decision talks to. The module plugs in real adapters (scan helper,
/// OpenSSL, libcurl, PAM conversation); unit tests plug in scripted fakes.

/// Runs the biometric step and relays each message; `relay` returns false when the
/// conversation failed, and the scan must then stop.
public protocol FingerprintScanner {
    func scan(user: String, options: Options, relay: (ScanMessage) -> Bool) -> ScanOutcome
}

public enum ScanOutcome: Equatable, Sendable {
    case matched(finger: String)
    case tooManyTries
    /// No reader, busy, helper crashed or timed out…: the reason is for the log.
    case unavailable(String)
    case conversationFailed
}

/// Whether a user is enrolled on this host.
public enum EnrollmentState: Equatable, Sendable {
    case enrolled
    case notEnrolled
    /// State exists but may not be trusted (wrong owner or mode, a link…).
    case unsafe(String)
}

/// Signs with the user's device key.
public protocol TokenSigner {
    /// RFC 7638 thumbprint of the public key.
    var kid: String { get }
    /// RS256 signature of `input`; nil when signing failed.
    func signRS256(_ input: [UInt8]) -> [UInt8]?
}

/// The per-user state under `state_dir`.
public protocol EnrollmentStore {
    func enrollment(of user: String, options: Options) -> EnrollmentState
    /// Loads the device key; the error text names the file and the rule, never the key.
    func signer(for user: String, options: Options) -> Result<TokenSigner, KeyLoadError>
}

public struct KeyLoadError: Error, Equatable, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// POSTs JSON to the authenticator.
public protocol AuthenticatorTransport {
    func post(json: [UInt8], options: Options) -> TransportResult
}

public enum TransportResult: Equatable, Sendable {
    case answered(status: Int, body: [UInt8])
    /// Connection refused, TLS failure, timeout…: the reason is for the log.
    case failed(String)
}

/// The PAM conversation: text for the person at the keyboard.
public protocol Conversation {
    /// PAM_TEXT_INFO; false when the application's conversation failed.
    func info(_ text: String) -> Bool
    /// PAM_ERROR_MSG; false when the application's conversation failed.
    func error(_ text: String) -> Bool
}

/// Seconds since the epoch.
public protocol Clock {
    func now() -> Int64
}

/// Random bytes for the `jti`; nil when none could be had.
public protocol RandomSource {
    func bytes(_ count: Int) -> [UInt8]?
}

/// The system's user database (getpwnam_r in the module).
public protocol UserDatabase {
    func exists(_ user: String) -> Bool
}

/// The words of an audit row that the code decides by: what happened (`AuditEventKind`) and
/// how it ended (`AuditOutcome`). They are text only in the database, in the log line, in
/// /metrics and in what the admin tools print (`name`); everywhere else they are these enums.

/// What an audit row records.
public enum AuditEventKind: Hashable, Sendable, CustomStringConvertible {
    /// A login token (`/v1/login`, `/login`).
    case login
    /// The `/oauth2/token` grant.
    case oauthToken
    /// `POST /v1/keys`.
    case register
    /// A key revoked by its host's token or by its own holder (`DELETE /v1/keys/<kid>`).
    case revoke
    /// A TPM credential-activation challenge refused (`POST /v1/keys/challenge`).
    case attestChallenge
    /// `POST /v1/policy/check` (its log line; it writes no row).
    case policyCheck
    /// Refused requests of one address and window, counted together.
    case refusals
    case adminRevoke
    case adminApprove
    case adminCreate
    case adminSetup
    case adminSignin
    case tokenCreate
    case tokenRevoke
    case policyChange
    /// A host's EK pinned, changed or reset.
    case ekPin
    /// An event this release does not know: a row another release wrote.
    case other(String)

    /// Every event this release writes.
    public static let known: [AuditEventKind] = [
        .login, .oauthToken, .register, .revoke, .attestChallenge, .policyCheck, .refusals, .adminRevoke, .adminApprove,
        .adminCreate, .adminSetup, .adminSignin, .tokenCreate, .tokenRevoke, .policyChange, .ekPin,
    ]

    /// The event as the `event` column holds it.
    public var name: String {
        switch self {
        case .login: return "login"
        case .oauthToken: return "oauth_token"
        case .register: return "register"
        case .revoke: return "revoke"
        case .attestChallenge: return "attest_challenge"
        case .policyCheck: return "policy_check"
        case .refusals: return "refusals"
        case .adminRevoke: return "admin_revoke"
        case .adminApprove: return "admin_approve"
        case .adminCreate: return "admin_create"
        case .adminSetup: return "admin_setup"
        case .adminSignin: return "admin_signin"
        case .tokenCreate: return "token_create"
        case .tokenRevoke: return "token_revoke"
        case .policyChange: return "policy_change"
        case .ekPin: return "ek_pin"
        case let .other(name): return name
        }
    }

    public var description: String { name }

    /// The event the column's `name` stands for.
    public init(name: String) {
        self = Self.known.first { $0.name == name } ?? .other(name)
    }

    /// `name` for SQL text: a partial index and the console's counts compare with it.
    public var sqlLiteral: String { "'" + name + "'" }
}

/// How a request or an action ended.
public enum AuditOutcome: Hashable, Sendable, CustomStringConvertible {
    /// Done: the login accepted, the key registered, the change made.
    case accept
    /// Refused, for the row's reason.
    case deny
    /// Not decided: the registry could not be read or written (answered 503).
    case error
    /// An outcome this release does not know: a row another release wrote.
    case other(String)

    public static let known: [AuditOutcome] = [.accept, .deny, .error]

    /// The outcome as the `outcome` column holds it.
    public var name: String {
        switch self {
        case .accept: return "accept"
        case .deny: return "deny"
        case .error: return "error"
        case let .other(name): return name
        }
    }

    public var description: String { name }

    /// The outcome the column's `name` stands for.
    public init(name: String) {
        self = Self.known.first { $0.name == name } ?? .other(name)
    }

    /// `name` for SQL text: the partial indexes and the console's counts compare with it.
    public var sqlLiteral: String { "'" + name + "'" }
}

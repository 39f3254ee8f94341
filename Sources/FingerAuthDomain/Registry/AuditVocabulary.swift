import FingerAuthCore
import FingerAuthKeyFormats

/// The words of an audit row that the code decides by: what happened (`AuditEventKind`) and
/// how it ended (`AuditOutcome`). They are text only in the database, in the log line, in
/// /metrics and in what the admin tools print (`name`); everywhere else they are these enums.

/// What an audit row records.
package enum AuditEventKind: Hashable, Sendable, CustomStringConvertible {
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
    /// An admin's password and sessions ended, a new setup link made (`admin reset`).
    case adminReset
    /// An admin account deleted (`admin remove`).
    case adminRemove
    case tokenCreate
    case tokenRevoke
    case policyChange
    /// A host's EK pinned, changed or reset.
    case ekPin
    /// A login a host made offline within a grant, reported at its next online contact; its
    /// time is the login's, by the host's clock.
    case offlineLogin
    /// A host's offline records with a gap (a record missing) or a broken chain (a record
    /// changed), found when they were uploaded.
    case offlineGap
    /// An admin withdrew a host's offline grants.
    case grantWithdraw
    /// A host asked for a remote approval (`POST /v1/approvals`): accepted (pending) or refused.
    case approvalRequest
    /// A pending approval was delivered to a workstation's watch.
    case approvalShown
    /// A person approved, or denied ("Not me"), an approval on a workstation.
    case approvalApproved
    case approvalDenied
    /// Nobody decided before the approval's expiry.
    case approvalExpired
    /// The asking host withdrew it, or a retry from the same place replaced it.
    case approvalWithdrawn
    /// `POST /v1/hosts/keys`: a host key registered (or refused).
    case hostKeyRegister
    /// A host key revoked by its host's next registration (the admin's revocations are `adminRevoke`).
    case hostKeyRevoke
    /// An event this release does not know: a row another release wrote.
    case other(String)

    /// Every event this release writes.
    package static let known: [AuditEventKind] = [
        .login, .oauthToken, .register, .revoke, .attestChallenge, .policyCheck, .refusals, .adminRevoke, .adminApprove,
        .adminCreate, .adminSetup, .adminSignin, .adminReset, .adminRemove, .tokenCreate, .tokenRevoke, .policyChange,
        .ekPin,
        .offlineLogin, .offlineGap, .grantWithdraw,
        .approvalRequest, .approvalShown, .approvalApproved, .approvalDenied, .approvalExpired, .approvalWithdrawn,
        .hostKeyRegister, .hostKeyRevoke,
    ]

    /// The event as the `event` column holds it.
    package var name: String {
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
        case .adminReset: return "admin_reset"
        case .adminRemove: return "admin_remove"
        case .tokenCreate: return "token_create"
        case .tokenRevoke: return "token_revoke"
        case .policyChange: return "policy_change"
        case .ekPin: return "ek_pin"
        case .offlineLogin: return "offline_login"
        case .offlineGap: return "offline_gap"
        case .grantWithdraw: return "grant_withdraw"
        case .approvalRequest: return "approval_requested"
        case .approvalShown: return "approval_shown"
        case .approvalApproved: return "approval_approved"
        case .approvalDenied: return "approval_denied"
        case .approvalExpired: return "approval_expired"
        case .approvalWithdrawn: return "approval_withdrawn"
        case .hostKeyRegister: return "host_key_register"
        case .hostKeyRevoke: return "host_key_revoke"
        case let .other(name): return name
        }
    }

    package var description: String { name }

    /// The event the column's `name` stands for.
    package init(name: String) {
        self = Self.known.first { $0.name == name } ?? .other(name)
    }

    /// `name` for SQL text: a partial index and the console's counts compare with it.
    package var sqlLiteral: String { "'" + name + "'" }
}

/// How a request or an action ended.
package enum AuditOutcome: Hashable, Sendable, CustomStringConvertible {
    /// Done: the login accepted, the key registered, the change made.
    case accept
    /// Refused, for the row's reason.
    case deny
    /// Not decided: the registry could not be read or written (`Outcome.unavailable`).
    case error
    /// An outcome this release does not know: a row another release wrote.
    case other(String)

    package static let known: [AuditOutcome] = [.accept, .deny, .error]

    /// The outcome as the `outcome` column holds it.
    package var name: String {
        switch self {
        case .accept: return "accept"
        case .deny: return "deny"
        case .error: return "error"
        case let .other(name): return name
        }
    }

    package var description: String { name }

    /// The outcome the column's `name` stands for.
    package init(name: String) {
        self = Self.known.first { $0.name == name } ?? .other(name)
    }

    /// `name` for SQL text: the partial indexes and the console's counts compare with it.
    package var sqlLiteral: String { "'" + name + "'" }
}

/// Why a request was refused or an action ended as it did: the `reason` of an audit row and
/// of a log line, and of a refusal's answer. Text only at the boundaries (`text`); a row's
/// text read back is the same reason (`init(text:)`), since no two kinds share a word.
package enum AuditReason: Hashable, Sendable, CustomStringConvertible {
    /// A token's refusal, by the verifier or by the write transaction.
    case token(Refusal)
    /// A registration proof's refusal (`proof_` and the token's reason).
    case proof(Refusal)
    /// A TPM key attestation's refusal.
    case attestation(AttestationRefusal)
    /// Any other fixed reason.
    case code(ReasonCode)
    /// Free text: what a change did and who made it (`by admin: before -> after`).
    case detail(String)

    /// The reason as the `reason` column, the log line and /metrics hold it.
    package var text: String {
        switch self {
        case let .token(refusal): return refusal.rawValue
        case let .proof(refusal): return "proof_" + refusal.rawValue
        case let .attestation(refusal): return refusal.rawValue
        case let .code(code): return code.rawValue
        case let .detail(text): return text
        }
    }

    package var description: String { text }

    /// The reason a column's `text` stands for.
    package init(text: String) {
        if let refusal = Refusal(rawValue: text) {
            self = .token(refusal)
        } else if let refusal = AttestationRefusal(rawValue: text) {
            self = .attestation(refusal)
        } else if let code = ReasonCode(rawValue: text) {
            self = .code(code)
        } else if text.hasPrefix("proof_"), let refusal = Refusal(rawValue: String(text.dropFirst(6))) {
            self = .proof(refusal)
        } else {
            self = .detail(text)
        }
    }
}

/// The fixed reasons that are not a token's (`Refusal`) or an attestation's
/// (`AttestationRefusal`): the word is the audit row's, and where a client hears it, the
/// answer's `error`.
package enum ReasonCode: String, Sendable, CaseIterable {
    // What a request's form is refused for.
    case invalidRequest = "invalid_request"
    case invalidJSON = "invalid_json"
    case unsupportedMediaType = "unsupported_media_type"
    case bodyTooLarge = "body_too_large"
    case unsupportedGrantType = "unsupported_grant_type"
    case invalidJWK = "invalid_jwk"
    // Who may: host tokens, the metrics token, hosts, the policy, hardware keys.
    case badHostToken = "bad_host_token"
    case badMetricsToken = "bad_metrics_token"
    case hostMismatch = "host_mismatch"
    case policyDenied = "policy_denied"
    case hardwareKeyRequired = "hardware_key_required"
    // Limits: refusals counted together in one `refusals` row per address and window.
    case rateLimited = "rate_limited"
    case registrationsLimited = "registrations_limited"
    case signinLimited = "signin_limited"
    case setupRefused = "setup_refused"
    case badCredentials = "bad_credentials"
    // Registration.
    case pendingApproval = "pending_approval"
    case alreadyRegistered = "already_registered"
    case kidConflict = "kid_conflict"
    case tooManyKeys = "too_many_keys"
    case ekMismatch = "ek_mismatch"
    // TPM attestation before its certification is checked.
    case attestationNotConfigured = "attestation_not_configured"
    case invalidAttestation = "invalid_attestation"
    case ekUntrusted = "ek_untrusted"
    case tooManyChallenges = "too_many_challenges"
    case challengeUnknown = "challenge_unknown"
    case activationFailed = "activation_failed"
    // Revocations and approvals.
    case keyHolder = "key_holder"
    case alreadyRevoked = "already_revoked"
    case alreadyActive = "already_active"
    case unknownToken = "unknown_token"
    case hostRevoked = "host_revoked"
    case ekRepinned = "ek_repinned"
    case bulk = "bulk"
    // Remote approvals.
    case approvalPending = "approval_pending"
    case approvalMuted = "approval_muted"
    case approvalUnknown = "approval_unknown"
    case approvalClosed = "approval_closed"
    case approvalMismatch = "approval_mismatch"
    case notYourApproval = "not_your_approval"
    case approvalsLimited = "approvals_limited"
    case replacedByRetry = "replaced_by_retry"
    case notHostKey = "not_host_key"
    // Policy changes that changed nothing.
    case unknownRule = "unknown_rule"
    case unknownHost = "unknown_host"
    case nothingToRemove = "nothing_to_remove"
    // Not the request's fault.
    case storeUnavailable = "store_unavailable"
    case auditFailed = "audit_failed"
    case noRandom = "no_random"
    // Host keys.
    case hostKeyReplaced = "host_key_replaced"
    case hostKey = "host_key"
}

/// Why the authenticator refused a login, as one fixed word. The login helper derives it
/// from the authenticator's answer (its HTTP status and `error` code) and sends it on its
/// `REFUSED` line; the module chooses the text the person sees from this code alone, never
/// from the answer's wording, which stays in the log line.
package enum RefusalCode: String, CaseIterable, Sendable {
    /// 403 `policy_denied`: a rule of the central policy says no for this user, host or service.
    case policyDenied = "policy_denied"
    /// 403 `hardware_key_required`: the authenticator takes only attested TPM keys.
    case hardwareKeyRequired = "hardware_key_required"
    /// The key was revoked (`key_revoked`), or revoked or rebound while the login was
    /// written (`key_changed`).
    case revoked
    /// The key waits for an admin's approval (`key_pending`).
    case pending
    /// The authenticator knows no such key (`unknown_kid`; fingerauthd says `invalid_token`
    /// for it, since it tells nobody which keys exist).
    case unknownKey = "unknown_key"
    /// The token's `jti` was used before (`replayed`).
    case replayed
    /// The token's times do not fit the authenticator's clock or limits (`expired`,
    /// `not_yet_valid`, `iat_in_future`, `bad_time_claim`, `bad_lifetime`, `ttl_too_long`).
    case tokenTime = "token_time"
    /// Any other 401: the token did not verify, or a claim is wrong (`invalid_token`,
    /// `wrong_sub`, `wrong_audience`…).
    case invalidToken = "invalid_token"
    /// 400: the request itself was refused (`invalid_request`, `invalid_json`…).
    case invalidRequest = "invalid_request"
    /// A 2xx that is no yes for this login: `ok` false, or a yes for another user, token or key.
    case otherAnswer = "other_answer"
    /// A 403 with any other code, or none.
    case refused
    /// Remote approval: the person answered "Not me" on their workstation.
    case approvalDenied = "approval_denied"
    /// Remote approval: nobody approved in time.
    case approvalTimedOut = "approval_timed_out"
    /// Remote approval: the user's requests are muted after a recent "Not me" (429
    /// `approval_muted`), or another approval of theirs is pending (409 `approval_pending`).
    case approvalHeld = "approval_held"

    /// The code for a refusing answer (400, 401, 403) with the authenticator's `error` code.
    package init(status: Int, error: String?) {
        switch (status, error) {
        case (403, "policy_denied"?): self = .policyDenied
        case (429, "approval_muted"?), (409, "approval_pending"?): self = .approvalHeld
        case (403, "hardware_key_required"?): self = .hardwareKeyRequired
        case (_, "key_revoked"?), (_, "key_changed"?): self = .revoked
        case (_, "key_pending"?): self = .pending
        case (_, "unknown_kid"?): self = .unknownKey
        case (_, "replayed"?): self = .replayed
        case (_, "expired"?), (_, "not_yet_valid"?), (_, "iat_in_future"?), (_, "bad_time_claim"?),
            (_, "bad_lifetime"?), (_, "ttl_too_long"?):
            self = .tokenTime
        case (400, _): self = .invalidRequest
        case (401, _): self = .invalidToken
        default: self = .refused
        }
    }

    /// The text the person is shown for this refusal.
    package var text: TextName {
        switch self {
        case .policyDenied: return .policyDenied
        case .hardwareKeyRequired, .revoked, .pending, .unknownKey, .replayed, .tokenTime, .invalidToken,
            .invalidRequest, .otherAnswer, .refused:
            return .refused
        case .approvalDenied: return .approvalDenied
        case .approvalTimedOut: return .approvalTimedOut
        case .approvalHeld: return .approvalHeld
        }
    }
}

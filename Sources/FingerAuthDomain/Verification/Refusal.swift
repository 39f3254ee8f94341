/// Why a token (login, revocation or registration proof) was refused. The raw value is
/// the `reason` in the audit table and in the log line; a client hears it only once the
/// token's signature verified with a registered key (`TokenCheck.refused`) — before that
/// every refusal answers the endpoint's one fixed code (`invalid_token`, `invalid_grant`).
package enum Refusal: String, Error, Sendable, CaseIterable {
    // Shape.
    case tooLarge = "token_too_large"
    case malformed = "malformed_token"
    // Header.
    case algorithm = "alg_not_allowed"
    case type = "bad_typ"
    case critical = "crit_not_supported"
    case missingKid = "missing_kid"
    /// A `kid` that is not an RFC 7638 thumbprint (43 base64url characters).
    case badKid = "bad_kid"
    /// A login token whose `sub` breaks the user-name rule (`UserName`): no key can be
    /// registered to it. Refused as malformed (`Malformation.userName`), before any lookup.
    case invalidUserName = "invalid_user_name"
    // Key binding.
    case unknownKid = "unknown_kid"
    case keyRevoked = "key_revoked"
    case keyPending = "key_pending"
    /// A key-holder JWT (DELETE /v1/keys/<kid>) whose `kid` is not the key in the path.
    case kidMismatch = "kid_mismatch"
    case kidNotForSubject = "kid_not_for_sub"
    case kidNotForIssuer = "kid_not_for_iss"
    case kidNotThumbprint = "kid_not_thumbprint"
    case unusableKey = "unusable_key"
    // Signature.
    case signature = "bad_signature"
    // Claims.
    case missingSubject = "missing_sub"
    case missingIssuer = "missing_iss"
    case wrongSubject = "wrong_sub"
    case wrongIssuer = "wrong_iss"
    case timeClaim = "bad_time_claim"
    case expired = "expired"
    case notYetValid = "not_yet_valid"
    case issuedInFuture = "iat_in_future"
    case lifetime = "bad_lifetime"
    case ttlTooLong = "ttl_too_long"
    case audience = "wrong_audience"
    case missingJTI = "missing_jti"
    case badJTI = "bad_jti"
    case replayed = "replayed"
    /// The key was revoked, or is no longer bound to that user and host, between the
    /// token's check and its write transaction.
    case keyChanged = "key_changed"
    /// A login token without its `service` claim (the PAM service: the policy decides by it).
    case missingService = "missing_service"
    /// A `service` that is not 1 to 64 printable ASCII characters.
    case badService = "bad_service"
    /// `amr` names `hwk` (a hardware-held key) but the key was not registered with a TPM
    /// attestation: a software key claiming to be a TPM key.
    case hardwareClaimUnattested = "hwk_not_attested"
    // Not the token's fault: the store failed. `unavailable`, never accepted.
    case unavailable = "unavailable"
}

extension Refusal {
    /// The refusal for what the write transaction found.
    package init(_ refusal: ClaimRefusal) {
        switch refusal {
        case .keyRevoked: self = .keyRevoked
        case .keyPending: self = .keyPending
        case .keyChanged: self = .keyChanged
        case .replayed: self = .replayed
        }
    }
}

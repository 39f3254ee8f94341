/// Why a token (login JWT or registration proof) was refused. The raw value is the
/// `error` a client sees, the `reason` in the audit table and in the log line.
public enum Refusal: String, Error, Sendable, CaseIterable {
    // Shape.
    case tooLarge = "token_too_large"
    case malformed = "malformed_token"
    // Header.
    case algorithm = "alg_not_allowed"
    case type = "bad_typ"
    case critical = "crit_not_supported"
    case missingKid = "missing_kid"
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
    // Not the token's fault: the store failed. Answered 503, never accepted.
    case unavailable = "unavailable"
}

import FingerAuthCore

/// The limits and lifetime of TPM credential-activation challenges: what
/// `POST /v1/keys/challenge` makes and the `POST /v1/keys` that proves the TPM unwrapped
/// it takes. They live in the database (`attestation_challenges`), so the answer may reach
/// any instance of a fleet; each is used once (taken, answered right or wrong), lives
/// `lifetime` seconds, and a host may hold only `perHost` at a time, the authenticator
/// `capacity`: a host token cannot fill the disk. Only the secret's SHA-256 is stored.
enum AttestationChallenges {
    static let lifetime: Int64 = 120
    static let perHost = 4
    static let capacity = 1024
}

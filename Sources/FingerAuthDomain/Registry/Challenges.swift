/// One challenge as stored. The secret is kept as its SHA-256 only: the database never
/// holds what would answer the challenge.
package struct StoredChallenge: Sendable, Equatable {
    package var id: String
    package var user: String
    package var host: String
    /// The AK's TPM2B_PUBLIC, as the host sent it.
    package var attestationKey: [UInt8]
    package var secretDigest: [UInt8]
    package var nonce: [UInt8]
    /// Seconds since the epoch after which the challenge is gone.
    package var expires: Int64
    /// The EK the challenge's secret was wrapped for (`EndorsementKeyID`): the EK whose TPM
    /// answering it proves to hold the AK.
    package var ek: String

    package init(
        id: String, user: String, host: String, attestationKey: [UInt8], secretDigest: [UInt8],
        nonce: [UInt8], expires: Int64, ek: String
    ) {
        self.ek = ek
        self.id = id
        self.user = user
        self.host = host
        self.attestationKey = attestationKey
        self.secretDigest = secretDigest
        self.nonce = nonce
        self.expires = expires
    }
}

/// Whether a new challenge was stored.
package enum ChallengeAdmission: Sendable, Equatable {
    case admitted
    /// The host already holds its share of open challenges.
    case hostFull
    /// The authenticator holds its whole capacity of open challenges.
    case full
}

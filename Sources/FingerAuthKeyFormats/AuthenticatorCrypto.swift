import FingerAuthCore

/// What fingerauthd's service needs of a cryptography library, as protocols: the service
/// (FingerAuthDomain) stays plain Swift, and FingerAuthCrypto implements them over OpenSSL
/// (`OpenSSLAuthenticatorCrypto`, `TPMKeyAttestation`).

/// A public key that checks RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256).
package protocol SignatureKey: AnyObject, Sendable {
    /// Whether `signature` is this key's RS256 signature of `data`.
    func verifyRS256(signature: [UInt8], data: [UInt8]) -> Bool
}

/// Digests, random bytes, RSA public keys and the checks of a TPM key attestation that need
/// no trust anchor, for the authenticator.
package protocol AuthenticatorCrypto: RandomSource, Sendable {
    /// The RSA public key of `jwk`, ready to verify; nil when it cannot be used (size or
    /// exponent out of range, a library failure).
    func signatureKey(_ jwk: JWK) -> (any SignatureKey)?
    /// SHA-256 of `data`; nil only when the library fails.
    func sha256(_ data: [UInt8]) -> [UInt8]?
    /// The TPM Name of `ak` when it is a restricted signing key bound to its TPM; nil otherwise.
    func attestationKeyName(_ ak: TPMPublicKey) -> [UInt8]?
    /// Why the device key `key`, certified by `ak` over `nonce` (TPM2_Certify: `attest`,
    /// `signature`), is not the TPM key of `jwk`; nil when it is.
    func certificationRefusal(
        key: TPMPublicKey, jwk: JWK, attest: [UInt8], signature: [UInt8], ak: TPMPublicKey,
        nonce: [UInt8]
    ) -> AttestationRefusal?
}

extension AuthenticatorCrypto {
    /// RFC 7638 JWK thumbprint (SHA-256, base64url): the key id everywhere in FingerAuth.
    package func thumbprint(of jwk: JWK) -> String? {
        sha256(jwk.thumbprintInput).map(Base64URL.encode)
    }
}

/// Why a TPM key attestation was refused: the `error` of the 4xx answer and the audit reason.
package enum AttestationRefusal: String, Sendable, Equatable, CaseIterable {
    /// The attestation key is not a restricted signing key that stays in its TPM.
    case akInvalid = "ak_invalid"
    /// The TPMS_ATTEST did not parse, is not a certification, or its signature is not the AK's.
    case certifyInvalid = "certify_invalid"
    /// The certification's qualifying data is not this challenge's nonce.
    case nonceMismatch = "nonce_mismatch"
    /// The certified Name is not the key sent, or that key is not the registered JWK.
    case keyMismatch = "key_mismatch"
    /// The device key could leave its TPM (no fixedTPM, fixedParent, sensitiveDataOrigin),
    /// or is not an unrestricted signing-only key.
    case keyAttributes = "key_attributes"
}

/// A TPM endorsement-key certificate that chains to a trusted CA.
package protocol EndorsementCertificate: Sendable {
    /// The name FingerAuth gives its key (`EndorsementKeyID`: SHA-256 of the EK's public key
    /// as DER SubjectPublicKeyInfo, 64 lowercase hex digits).
    var keyID: String { get }
}

/// How an EK certificate was judged.
package enum EndorsementCheck: Sendable {
    /// Not a certificate.
    case malformed
    /// It does not chain to a trusted CA (`why`, for the log) or is not an RSA-2048 key (nil).
    case untrusted(why: String?)
    /// Its key could not be named (a library failure).
    case unnamed
    case trusted(any EndorsementCertificate)
}

/// What a credential activation sends the host: TPM2_MakeCredential's two outputs.
package struct MadeCredential: Sendable, Equatable {
    package let credentialBlob: [UInt8]
    package let encryptedSecret: [UInt8]

    package init(credentialBlob: [UInt8], encryptedSecret: [UInt8]) {
        self.credentialBlob = credentialBlob
        self.encryptedSecret = encryptedSecret
    }
}

/// The half of a TPM key attestation that needs the trusted EK CAs (`tpm-ek-ca`): judging an
/// EK certificate, and wrapping a secret for its key.
package protocol KeyAttestation: Sendable {
    /// The EK certificate `der`, judged against the trusted EK CAs.
    func endorsement(_ der: [UInt8]) -> EndorsementCheck
    /// TPM2_MakeCredential of `secret` for the EK of `certificate` and the object `name`;
    /// nil when it could not be made.
    func makeCredential(_ certificate: any EndorsementCertificate, name: [UInt8], secret: [UInt8]) -> MadeCredential?
}

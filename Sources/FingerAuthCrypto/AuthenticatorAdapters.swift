import FingerAuthCore
import FingerAuthKeyFormats

/// An RSA public key as the authenticator's verifier holds it.
extension RSAPublicKey: SignatureKey {}

/// FingerAuthCore's `AuthenticatorCrypto` over OpenSSL: what fingerauthd's service uses for
/// signatures, digests and random bytes.
package struct OpenSSLAuthenticatorCrypto: AuthenticatorCrypto {
    package init() {}

    package func signatureKey(_ jwk: JWK) -> (any SignatureKey)? { try? RSAPublicKey(jwk: jwk) }

    package func sha256(_ data: [UInt8]) -> [UInt8]? { Digest.sha256(data) }

    package func bytes(_ count: Int) -> [UInt8]? { SecureRandom.bytes(count) }

    package func attestationKeyName(_ ak: TPMPublicKey) -> [UInt8]? {
        guard TPMAttestation.attestationKeyRefusal(ak) == nil else { return nil }
        return TPMAttestation.name(of: ak)
    }

    package func certificationRefusal(
        key: TPMPublicKey, jwk: JWK, attest: [UInt8], signature: [UInt8], ak: TPMPublicKey,
        nonce: [UInt8]
    ) -> AttestationRefusal? {
        if let refusal = TPMAttestation.deviceKeyRefusal(key, jwk: jwk) { return refusal }
        return TPMAttestation.certifyRefusal(attest: attest, signature: signature, ak: ak, key: key, nonce: nonce)
    }
}

/// TPM key attestation (`KeyAttestation`) against the EK CAs of `tpm-ek-ca`.
package struct TPMKeyAttestation: KeyAttestation {
    /// An EK certificate that chained to `trust`, with its key's name.
    struct Endorsement: EndorsementCertificate {
        let certificate: X509Certificate
        let keyID: String
    }

    let trust: CertificateTrust

    package init(trust: CertificateTrust) {
        self.trust = trust
    }

    package func endorsement(_ der: [UInt8]) -> EndorsementCheck {
        guard let certificate = try? X509Certificate(der: der) else { return .malformed }
        if let why = trust.refusal(of: certificate) { return .untrusted(why: why) }
        guard certificate.isRSA(bits: 2048) else { return .untrusted(why: nil) }
        guard let id = EndorsementKeyID.of(certificate) else { return .unnamed }
        return .trusted(Endorsement(certificate: certificate, keyID: id))
    }

    package func makeCredential(_ certificate: any EndorsementCertificate, name: [UInt8], secret: [UInt8])
        -> MadeCredential?
    {
        guard let endorsement = certificate as? Endorsement else { return nil }
        return try? TPMCredential.make(endorsementKey: endorsement.certificate, name: name, secret: secret)
    }
}

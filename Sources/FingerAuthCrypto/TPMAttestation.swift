import FingerAuthCore
import FingerAuthKeyFormats

/// The checks of a TPM key attestation that need digests and signatures, over the
/// structures FingerAuthCore parses. Each returns nil when the check passed, else the
/// refusal the registration answers with (and audits).
package enum TPMAttestation {
    /// Why an attestation was refused: the `error` of the 4xx answer and the audit reason.
    package typealias Refusal = AttestationRefusal

    /// The attributes an attestation key must have, and a device key too.
    static let bound: TPMObjectAttributes = [.fixedTPM, .fixedParent, .sensitiveDataOrigin]

    /// The object's Name: its name algorithm (SHA-256), then SHA-256 of its TPMT_PUBLIC.
    package static func name(of key: TPMPublicKey) -> [UInt8]? {
        Digest.sha256(key.marshalled).map { [UInt8(TPMAlgorithm.sha256 >> 8), UInt8(TPMAlgorithm.sha256 & 0xFF)] + $0 }
    }

    /// An AK must be restricted, sign only, bound to its TPM, and sign RSASSA with SHA-256
    /// (a restricted key signs only digests the TPM made, so it cannot be made to sign a
    /// forged TPMS_ATTEST).
    package static func attestationKeyRefusal(_ ak: TPMPublicKey) -> Refusal? {
        let needed: TPMObjectAttributes = bound.union([.restricted, .sign])
        guard ak.attributes.isSuperset(of: needed), !ak.attributes.contains(.decrypt),
            ak.scheme.algorithm == TPMAlgorithm.rsassa, ak.scheme.hash == TPMAlgorithm.sha256
        else { return .akInvalid }
        return nil
    }

    /// A device key must be RSA-2048 or larger, bound to its TPM, created inside it, an
    /// unrestricted signing key that cannot decrypt, and the very key of `jwk`.
    package static func deviceKeyRefusal(_ key: TPMPublicKey, jwk: JWK) -> Refusal? {
        guard key.attributes.isSuperset(of: bound.union([.sign])), !key.attributes.contains(.decrypt),
            !key.attributes.contains(.restricted)
        else { return .keyAttributes }
        guard Array(jwk.n.drop { $0 == 0 }) == key.modulus, jwk.e == key.exponentBytes else { return .keyMismatch }
        return nil
    }

    /// TPM2_Certify of `key` by `ak`: a TPMS_ATTEST made by the TPM, of type certify, whose
    /// qualifying data is `nonce` and whose certified Name is `key`'s, signed RSASSA-SHA-256
    /// by the AK.
    package static func certifyRefusal(
        attest: [UInt8], signature: [UInt8], ak: TPMPublicKey,
        key: TPMPublicKey, nonce: [UInt8]
    ) -> Refusal? {
        guard let info = try? TPMCertifyInfo(attest), let parsed = try? TPMSignature(signature),
            let akKey = try? RSAPublicKey(jwk: JWK(n: ak.modulus, e: ak.exponentBytes)),
            akKey.verifyRS256(signature: parsed.signature, data: attest)
        else { return .certifyInvalid }
        guard constantTimeEqual(info.extraData, nonce) else { return .nonceMismatch }
        guard let expected = name(of: key), constantTimeEqual(info.name, expected) else { return .keyMismatch }
        return nil
    }

    /// Equal length and bytes, in time that depends on the length only.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { ConstantTime.equal(a, b) }
}

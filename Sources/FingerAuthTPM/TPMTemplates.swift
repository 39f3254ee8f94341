import FingerAuthCore
import FingerAuthKeyFormats

/// The TPM2B_PUBLIC templates of the objects FingerAuth makes, as wire bytes (TPM 2.0
/// Library Part 2, 12.2; the EK's is the TCG EK Credential Profile's template L-1).
package enum TPMTemplates {
    package static let rsa: UInt16 = 0x0001, ecc: UInt16 = 0x0023, sha256: UInt16 = 0x000B, null: UInt16 = 0x0010
    package static let aes: UInt16 = 0x0006, cfb: UInt16 = 0x0043, rsassa: UInt16 = 0x0014, nistP256: UInt16 = 0x0003

    package static let bound: TPMObjectAttributes = [.fixedTPM, .fixedParent, .sensitiveDataOrigin]

    /// The storage primary the device keys are wrapped by (TPM_RH_OWNER parent): ECC
    /// NIST P-256, which every TPM 2.0 has and makes in milliseconds, where an RSA primary
    /// can take seconds on a real chip. Remade from the owner seed on every use.
    package static var storagePrimary: [UInt8] {
        let attributes = bound.union([.userWithAuth, .noDA, .restricted, .decrypt])
        var body = TPMWire.u16(ecc) + TPMWire.u16(sha256) + TPMWire.u32(attributes.rawValue) + TPMWire.sized([])
        body += TPMWire.u16(aes) + TPMWire.u16(128) + TPMWire.u16(cfb) // symmetric
        body += TPMWire.u16(null) // scheme
        body += TPMWire.u16(nistP256)
        body += TPMWire.u16(null) // kdf
        body += TPMWire.sized([]) + TPMWire.sized([]) // unique x, y
        return TPMWire.sized(body)
    }

    /// An RSA-2048 RSASSA-SHA-256 signing key: the device key (sign only, never restricted)
    /// or, `restricted`, the attestation key.
    package static func signingKey(restricted: Bool) -> [UInt8] {
        var attributes = bound.union([.userWithAuth, .sign])
        if restricted { attributes.insert(.restricted) }
        var body = TPMWire.u16(rsa) + TPMWire.u16(sha256) + TPMWire.u32(attributes.rawValue) + TPMWire.sized([])
        body += TPMWire.u16(null) // symmetric
        body += TPMWire.u16(rsassa) + TPMWire.u16(sha256) // scheme
        body += TPMWire.u16(2048) + TPMWire.u32(0) // keyBits, exponent (65537)
        body += TPMWire.sized([]) // unique
        return TPMWire.sized(body)
    }

    /// PolicySecret(TPM_RH_ENDORSEMENT): the EK's authPolicy in template L-1.
    package static let endorsementPolicy: [UInt8] = [
        0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xB3, 0xF8, 0x1A, 0x90, 0xCC, 0x8D, 0x46, 0xA5, 0xD7, 0x24,
        0xFD, 0x52, 0xD7, 0x6E, 0x06, 0x52, 0x0B, 0x64, 0xF2, 0xA1, 0xDA, 0x1B, 0x33, 0x14, 0x69, 0xAA,
    ]

    /// The RSA-2048 EK of the TCG default template: the key in the EK certificate.
    package static var endorsementKey: [UInt8] {
        let attributes = bound.union([.adminWithPolicy, .restricted, .decrypt])
        var body =
            TPMWire.u16(rsa) + TPMWire.u16(sha256) + TPMWire.u32(attributes.rawValue) + TPMWire.sized(endorsementPolicy)
        body += TPMWire.u16(aes) + TPMWire.u16(128) + TPMWire.u16(cfb)
        body += TPMWire.u16(null)
        body += TPMWire.u16(2048) + TPMWire.u32(0)
        body += TPMWire.sized([UInt8](repeating: 0, count: 256))
        return TPMWire.sized(body)
    }
}

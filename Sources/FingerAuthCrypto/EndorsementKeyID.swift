/// How FingerAuth names a TPM's endorsement key (EK): the SHA-256 of its public key as DER
/// SubjectPublicKeyInfo, in lowercase hex. The host computes it from its EK certificate
/// (`fingerauth key ek`), the authenticator from the certificate a host attests with, and
/// an admin can check it with the TPM's own tools (`tpm2_readpublic -c EK -f der -o ek.der`,
/// then `sha256sum ek.der`): all three are the same DER encoding of the same key. It names
/// the key, not the certificate, so a vendor that reissues the certificate keeps the name.
package enum EndorsementKeyID {
    /// The 64 hex digits naming the EK certified by `certificate`; nil when libcrypto fails.
    package static func of(_ certificate: X509Certificate) -> String? {
        certificate.publicKeyDER.flatMap(Digest.sha256).map(Digest.hex)
    }

    /// `text` as a stored EK name: 64 hex digits, upper case accepted and folded to lower
    /// case, an optional `sha256:` prefix dropped; nil for anything else.
    package static func normalized(_ text: String) -> String? {
        var bytes = Array(text.utf8)
        if bytes.count == 71, String(decoding: bytes.prefix(7), as: UTF8.self).lowercased() == "sha256:" {
            bytes.removeFirst(7)
        }
        guard bytes.count == 64 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): out.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): out.append(byte + 0x20)
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The first 16 hex digits, for narrow tables (the full name is in `--json`).
    package static func short(_ id: String) -> String { String(id.prefix(16)) }
}

import COpenSSL
import FingerAuthCore
import FingerAuthKeyFormats

/// The authenticator's half of TPM credential activation (TPM 2.0 Library, Part 1, 24 and
/// 11.4.10): `make` is TPM2_MakeCredential done in software. It wraps a secret so that only
/// the TPM holding the endorsement key *and* an object of the given Name can unwrap it
/// (TPM2_ActivateCredential), which is how the server learns that an attestation key lives
/// in the same TPM as a certified endorsement key.
package enum TPMCredential {
    /// What the host's TPM needs to unwrap the secret: TPM2B_ID_OBJECT's contents
    /// (integrity HMAC, then the encrypted secret) and TPM2B_ENCRYPTED_SECRET's (the seed,
    /// RSA-OAEP encrypted to the endorsement key).
    package typealias Made = MadeCredential

    /// TPM2_MakeCredential for an RSA endorsement key of the TCG default template (name
    /// algorithm SHA-256, AES-128 CFB): a fresh 32-byte seed, encrypted with OAEP(SHA-256,
    /// label "IDENTITY\0"); `secret` (at most 32 bytes) AES-128-CFB encrypted under
    /// KDFa(seed, "STORAGE", name), with an HMAC under KDFa(seed, "INTEGRITY") over the
    /// ciphertext and `name`.
    package static func make(endorsementKey: X509Certificate, name: [UInt8], secret: [UInt8]) throws(CryptoError)
        -> Made
    {
        guard !secret.isEmpty, secret.count <= 32, name.count == 34 else {
            throw CryptoError(operation: "make credential", reason: "secret or name of the wrong size")
        }
        guard var seed = SecureRandom.bytes(32) else { throw CryptoError.last("make credential") }
        defer { wipe(&seed) }
        let encryptedSecret = try endorsementKey.oaepEncrypt(seed, label: Array("IDENTITY".utf8) + [0])
        var symmetricKey = try kdfa(key: seed, label: "STORAGE", contextU: name, contextV: [], bits: 128)
        defer { wipe(&symmetricKey) }
        var plain = [UInt8(secret.count >> 8), UInt8(secret.count & 0xFF)] + secret
        defer { wipe(&plain) }
        let encrypted = try aes128CFB(key: symmetricKey, plain)
        var integrityKey = try kdfa(key: seed, label: "INTEGRITY", contextU: [], contextV: [], bits: 256)
        defer { wipe(&integrityKey) }
        let integrity = try hmacSHA256(key: integrityKey, encrypted + name)
        let blob = [UInt8(0), UInt8(integrity.count)] + integrity + encrypted
        return Made(credentialBlob: blob, encryptedSecret: encryptedSecret)
    }

    /// KDFa with HMAC-SHA-256 (Part 1, 11.4.10.2): counter, label, 0, contextU, contextV,
    /// bits — iterated until `bits` are produced.
    package static func kdfa(key: [UInt8], label: String, contextU: [UInt8], contextV: [UInt8], bits: Int)
        throws(CryptoError) -> [UInt8]
    {
        guard bits > 0, bits <= 4096, bits % 8 == 0 else { throw CryptoError(operation: "KDFa", reason: "bad length") }
        let bytes = bits / 8
        var out: [UInt8] = []
        var counter: UInt32 = 1
        let tail = Array(label.utf8) + [0] + contextU + contextV + bigEndian(UInt32(bits))
        while out.count < bytes {
            out += try hmacSHA256(key: key, bigEndian(counter) + tail)
            counter += 1
        }
        return Array(out.prefix(bytes))
    }

    /// HMAC-SHA-256 (OpenSSL's one-shot HMAC).
    package static func hmacSHA256(key: [UInt8], _ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { k in
            data.withUnsafeBytes { d in
                HMAC(
                    EVP_sha256(), k.baseAddress, Int32(k.count), d.bindMemory(to: UInt8.self).baseAddress, d.count,
                    &out, &length)
            }
        }
        guard result != nil, length == 32 else { throw CryptoError.last("HMAC") }
        return out
    }

    /// AES-128 in CFB mode with a zero IV, as TPM2_MakeCredential uses it.
    static func aes128CFB(key: [UInt8], _ plain: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == 16, let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.last("AES-CFB") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let iv = [UInt8](repeating: 0, count: 16)
        var out = [UInt8](repeating: 0, count: plain.count + 16)
        var length: Int32 = 0
        var final: Int32 = 0
        guard EVP_EncryptInit_ex(ctx, EVP_aes_128_cfb128(), nil, key, iv) == 1,
            EVP_EncryptUpdate(ctx, &out, &length, plain, Int32(plain.count)) == 1
        else { throw CryptoError.last("AES-CFB") }
        let written = Int(length)
        let ok = out.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(ctx, buffer.baseAddress.map { $0 + written }, &final)
        }
        guard ok == 1 else { throw CryptoError.last("AES-CFB") }
        return Array(out.prefix(written + Int(final)))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}

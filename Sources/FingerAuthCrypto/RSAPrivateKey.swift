import COpenSSL
import FingerAuthCore

/// An RSA private key owned by this object (EVP_PKEY, freed in deinit).
package final class RSAPrivateKey {
    let pkey: OpaquePointer

    private init(pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// A new key (EVP_PKEY_Q_keygen "RSA"). FingerAuth uses 3072 bits by default, 2048 at least.
    package static func generate(bits: Int = 3072) throws -> RSAPrivateKey {
        guard bits == 2048 || bits == 3072 || bits == 4096 else {
            throw CryptoError(operation: "generate", reason: "key size must be 2048, 3072 or 4096")
        }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw CryptoError.last("keygen") }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1,
            EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1
        else { throw CryptoError.last("keygen") }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(ctx, &key) == 1, let key else { throw CryptoError.last("keygen") }
        return RSAPrivateKey(pkey: key)
    }

    /// Reads a PEM private key (PKCS#8 or traditional) from memory; refuses non-RSA keys and
    /// keys under 2048 bits. An encrypted key is refused without asking for a passphrase.
    /// The caller should clear `pem` afterwards.
    package init(pem: [UInt8]) throws {
        guard pem.count < 64 * 1024 else { throw CryptoError(operation: "load key", reason: "too large") }
        let loaded: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // A callback that gives no passphrase: with none, OpenSSL would prompt on the tty.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let loaded else { throw CryptoError.last("load key") }
        guard EVP_PKEY_is_a(loaded, "RSA") == 1, EVP_PKEY_get_bits(loaded) >= 2048 else {
            EVP_PKEY_free(loaded)
            throw CryptoError(operation: "load key", reason: "not an RSA key of at least 2048 bits")
        }
        pkey = loaded
    }

    /// Key size in bits.
    package var bits: Int { Int(EVP_PKEY_get_bits(pkey)) }

    /// Unencrypted PKCS#8 PEM (PEM_write_bio_PKCS8PrivateKey). Secret: write it 0600 only.
    package func pkcs8PEM() throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.last("export key") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.last("export key")
        }
        var data: UnsafeMutablePointer<CChar>?
        let length = fa_bio_mem_data(bio, &data)
        guard length > 0, let data else { throw CryptoError.last("export key") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// The public half as a JWK (n and e read with EVP_PKEY_get_bn_param).
    package func publicJWK() throws -> JWK {
        guard let n = bignumParam(OSSL_PKEY_PARAM_RSA_N), let e = bignumParam(OSSL_PKEY_PARAM_RSA_E) else {
            throw CryptoError.last("public key")
        }
        return JWK(n: n, e: e)
    }

    /// RS256: RSASSA-PKCS1-v1_5 with SHA-256 over `data` (EVP_DigestSign).
    package func signRS256(_ data: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError.last("sign") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { throw CryptoError.last("sign") }
        var length = 0
        let sized = data.withUnsafeBytes { EVP_DigestSign(ctx, nil, &length, $0.baseAddress, $0.count) }
        guard sized == 1, length > 0 else { throw CryptoError.last("sign") }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = data.withUnsafeBytes { EVP_DigestSign(ctx, &signature, &length, $0.baseAddress, $0.count) }
        guard signed == 1 else { throw CryptoError.last("sign") }
        return Array(signature.prefix(length))
    }

    /// The digests a TLS handshake signature may use with `signPSS`.
    package enum PSSDigest: Sendable {
        case sha256, sha384, sha512
        var name: String {
            switch self {
            case .sha256: return "SHA256"
            case .sha384: return "SHA384"
            case .sha512: return "SHA512"
            }
        }
        /// Bytes of a digest, which is also the salt's length (RFC 8446 4.2.3).
        package var length: Int {
            switch self {
            case .sha256: return 32
            case .sha384: return 48
            case .sha512: return 64
            }
        }
    }

    /// RSASSA-PSS over an already computed `digest` (MGF1 with the same hash, salt as long
    /// as the digest): the signature of a TLS 1.3 `rsa_pss_rsae_*` CertificateVerify.
    package func signPSS(digest: [UInt8], _ hash: PSSDigest) throws -> [UInt8] {
        guard digest.count == hash.length else {
            throw CryptoError(operation: "sign", reason: "digest of the wrong length")
        }
        guard let md = EVP_MD_fetch(nil, hash.name, nil) else { throw CryptoError.last("sign") }
        defer { EVP_MD_free(md) }
        return try signRaw(digest) { ctx in
            EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING) == 1 && EVP_PKEY_CTX_set_signature_md(ctx, md) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, Int32(hash.length)) == 1
        }
    }

    /// RSASSA-PKCS1-v1_5 of `digestInfo` as given (a DER DigestInfo, hashed and encoded by the
    /// caller): type-1 padding and the private-key operation, nothing else.
    package func signPKCS1(digestInfo: [UInt8]) throws -> [UInt8] {
        guard !digestInfo.isEmpty, digestInfo.count <= bits / 8 - 11 else {
            throw CryptoError(operation: "sign", reason: "input of the wrong length")
        }
        return try signRaw(digestInfo) { ctx in EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1 }
    }

    /// EVP_PKEY_sign of `input` on a context of its own, set up by `configure`.
    private func signRaw(_ input: [UInt8], _ configure: (OpaquePointer) -> Bool) throws -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new(pkey, nil) else { throw CryptoError.last("sign") }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_sign_init(ctx) == 1, configure(ctx) else { throw CryptoError.last("sign") }
        var length = 0
        let sized = input.withUnsafeBytes {
            EVP_PKEY_sign(ctx, nil, &length, $0.bindMemory(to: UInt8.self).baseAddress, $0.count)
        }
        guard sized == 1, length > 0 else { throw CryptoError.last("sign") }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = input.withUnsafeBytes {
            EVP_PKEY_sign(ctx, &signature, &length, $0.bindMemory(to: UInt8.self).baseAddress, $0.count)
        }
        guard signed == 1 else { throw CryptoError.last("sign") }
        return Array(signature.prefix(length))
    }

    private func bignumParam(_ name: UnsafePointer<CChar>) -> [UInt8]? {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, name, &bn) == 1, let bn else { return nil }
        defer { BN_free(bn) }
        let size = (BN_num_bits(bn) + 7) / 8
        guard size > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(size))
        guard BN_bn2bin(bn, &out) == size else { return nil }
        return out
    }
}

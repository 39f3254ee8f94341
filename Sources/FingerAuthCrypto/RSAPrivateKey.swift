import COpenSSL
import FingerAuthCore

/// An RSA private key owned by this object (EVP_PKEY, freed in deinit).
public final class RSAPrivateKey {
    let pkey: OpaquePointer

    private init(pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// A new key (EVP_PKEY_Q_keygen "RSA"). FingerAuth uses 3072 bits by default, 2048 at least.
    public static func generate(bits: Int = 3072) throws -> RSAPrivateKey {
        guard bits == 2048 || bits == 3072 || bits == 4096 else {
            throw CryptoError(operation: "generate", reason: "key size must be 2048, 3072 or 4096")
        }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw CryptoError.last("keygen") }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1,
              EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1 else { throw CryptoError.last("keygen") }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(ctx, &key) == 1, let key else { throw CryptoError.last("keygen") }
        return RSAPrivateKey(pkey: key)
    }

    /// Reads a PEM private key (PKCS#8 or traditional) from memory; refuses non-RSA keys and
    /// keys under 2048 bits. An encrypted key is refused without asking for a passphrase.
    /// The caller should clear `pem` afterwards.
    public init(pem: [UInt8]) throws {
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
    public var bits: Int { Int(EVP_PKEY_get_bits(pkey)) }

    /// Unencrypted PKCS#8 PEM (PEM_write_bio_PKCS8PrivateKey). Secret: write it 0600 only.
    public func pkcs8PEM() throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.last("export key") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.last("export key")
        }
        var data: UnsafeMutablePointer<CChar>?
        let length = fa_bio_mem_data(bio, &data)
        guard length > 0, let data else { throw CryptoError.last("export key") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// The public half as a JWK (n and e read with EVP_PKEY_get_bn_param).
    public func publicJWK() throws -> JWK {
        guard let n = bignumParam(OSSL_PKEY_PARAM_RSA_N), let e = bignumParam(OSSL_PKEY_PARAM_RSA_E) else {
            throw CryptoError.last("public key")
        }
        return JWK(n: n, e: e)
    }

    /// RS256: RSASSA-PKCS1-v1_5 with SHA-256 over `data` (EVP_DigestSign).
    public func signRS256(_ data: [UInt8]) throws -> [UInt8] {
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

import COpenSSL
import FingerAuthCore

/// fingerauthd's offline-grant key: an ECDSA P-256 private key (PKCS#8 PEM, root 0600)
/// that signs offline grants (ES256). Its public half is what hosts pin.
///
/// `@unchecked Sendable`: the key is set in `init` and never replaced; OpenSSL 3 lets
/// threads sign with one EVP_PKEY at once, each with a context of its own.
package final class GrantSigningKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// The public half.
    package let publicKey: GrantKeyJWK
    /// Its RFC 7638 thumbprint: the `kid` of every grant it signs.
    package let kid: String

    private init(pkey: OpaquePointer) throws(CryptoError) {
        guard let x = GrantSigningKey.coordinate(pkey, OSSL_PKEY_PARAM_EC_PUB_X),
            let y = GrantSigningKey.coordinate(pkey, OSSL_PKEY_PARAM_EC_PUB_Y),
            let jwk = GrantKeyJWK(x: x, y: y), let thumbprint = Digest.thumbprint(of: jwk)
        else {
            EVP_PKEY_free(pkey)
            throw CryptoError(operation: "grant key", reason: "cannot read the public key")
        }
        self.pkey = pkey
        publicKey = jwk
        kid = thumbprint
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A new P-256 key.
    package static func generate() throws(CryptoError) -> GrantSigningKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError.last("grant key") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw CryptoError.last("grant key") }
        return try GrantSigningKey(pkey: key)
    }

    /// Reads a PEM private key; refuses anything but an unencrypted P-256 key.
    package convenience init(pem: [UInt8]) throws(CryptoError) {
        guard pem.count < 64 * 1024 else { throw CryptoError(operation: "grant key", reason: "too large") }
        let loaded: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let loaded else { throw CryptoError.last("grant key") }
        var name = [CChar](repeating: 0, count: 32)
        var length = 0
        guard EVP_PKEY_is_a(loaded, "EC") == 1,
            EVP_PKEY_get_utf8_string_param(loaded, OSSL_PKEY_PARAM_GROUP_NAME, &name, name.count, &length) == 1,
            String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else {
            EVP_PKEY_free(loaded)
            throw CryptoError(operation: "grant key", reason: "not an EC P-256 key")
        }
        try self.init(pkey: loaded)
    }

    /// Unencrypted PKCS#8 PEM. Secret: write it 0600 only.
    package func pkcs8PEM() throws(CryptoError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.last("grant key") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.last("grant key")
        }
        var data: UnsafeMutablePointer<CChar>?
        let length = fa_bio_mem_data(bio, &data)
        guard length > 0, let data else { throw CryptoError.last("grant key") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// ES256 of `data`: ECDSA P-256 with SHA-256, as JWS wants it (`r || s`, 32 bytes each).
    package func signES256(_ data: [UInt8]) -> [UInt8]? {
        defer { ERR_clear_error() }
        guard let ctx = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return nil }
        var length = 0
        guard data.withUnsafeBytes({ EVP_DigestSign(ctx, nil, &length, $0.baseAddress, $0.count) }) == 1,
            length > 0, length <= 128
        else { return nil }
        var der = [UInt8](repeating: 0, count: length)
        guard data.withUnsafeBytes({ EVP_DigestSign(ctx, &der, &length, $0.baseAddress, $0.count) }) == 1 else {
            return nil
        }
        return ECDSASignature.raw(fromDER: Array(der.prefix(length)))
    }

    private static func coordinate(_ pkey: OpaquePointer, _ name: String) -> [UInt8]? {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, name, &number) == 1, let number else { return nil }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard BN_bn2binpad(number, &bytes, 32) == 32 else { return nil }
        return bytes
    }
}

/// ES256 verification with a pinned grant key (the host's side).
package struct OpenSSLGrantCheck: GrantSignatureCheck {
    package init() {}

    package func verifyES256(key: GrantKeyJWK, signature: [UInt8], data: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        guard signature.count == 64, let der = ECDSASignature.der(fromRaw: signature),
            let pkey = ECDSASignature.publicKey(key)
        else { return false }
        defer { EVP_PKEY_free(pkey) }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        return data.withUnsafeBytes { d in
            der.withUnsafeBytes { s in
                EVP_DigestVerify(
                    ctx, s.baseAddress?.assumingMemoryBound(to: UInt8.self), s.count,
                    d.baseAddress?.assumingMemoryBound(to: UInt8.self), d.count)
            }
        } == 1
    }
}

/// JWS's raw ECDSA signatures and OpenSSL's DER ones.
enum ECDSASignature {
    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { return nil }
        defer { ECDSA_SIG_free(parsed) }
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed) else { return nil }
        var out = [UInt8](repeating: 0, count: 64)
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        return ok ? out : nil
    }

    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard let r = BN_bin2bn(raw, 32, nil) else { return nil }
        guard let s = Array(raw[32...]).withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 32, nil) }) else {
            BN_free(r)
            return nil
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &out)
        guard length > 0, let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The EVP_PKEY of a P-256 public key (uncompressed point 04 || x || y); the caller frees it.
    static func publicKey(_ key: GrantKeyJWK) -> OpaquePointer? {
        var point: [UInt8] = [0x04] + key.x + key.y
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, "P-256", 0) == 1,
            OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, &point, point.count) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else { return nil }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1,
            EVP_PKEY_fromdata(ctx, &key, fa_evp_pkey_public_key_selection(), params) == 1
        else { return nil }
        return key
    }
}

import COpenSSL
import FingerAuthCore

/// An RSA public key built from a JWK (EVP_PKEY_fromdata), owned by this object, with its
/// verification contexts, set up once and used again by every thread that verifies.
///
/// `@unchecked Sendable`: both pointers are set in `init` and never replaced; OpenSSL 3
/// lets threads use one EVP_PKEY at once for verification, and the pool of idle contexts
/// is taken and given back under its own mutex (`fa_verify_pool`), so no context is used
/// by two threads at a time.
package final class RSAPublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// Idle verification contexts of this key (`fa_verify_pool`, behind its own mutex); nil
    /// when it could not be allocated — then every verification sets one up.
    private let contexts: UnsafeMutablePointer<fa_verify_pool>?

    /// Refuses keys under 2048 or over 8192 bits and exponents that are not odd and > 1.
    package init(jwk: JWK) throws {
        guard jwk.bits >= 2048, jwk.bits <= 8192 else {
            throw CryptoError(operation: "public key", reason: "RSA key size out of range")
        }
        guard jwk.e.count <= 8, let last = jwk.e.last, last & 1 == 1, jwk.e != [1] else {
            throw CryptoError(operation: "public key", reason: "bad RSA exponent")
        }
        guard let n = BN_bin2bn(jwk.n, Int32(jwk.n.count), nil) else { throw CryptoError.last("public key") }
        defer { BN_free(n) }
        guard let e = BN_bin2bn(jwk.e, Int32(jwk.e.count), nil) else { throw CryptoError.last("public key") }
        defer { BN_free(e) }
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError.last("public key") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, n) == 1,
            OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, e) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else { throw CryptoError.last("public key") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw CryptoError.last("public key") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1,
            EVP_PKEY_fromdata(ctx, &key, fa_evp_pkey_public_key_selection(), params) == 1,
            let key
        else { throw CryptoError.last("public key") }
        pkey = key
        contexts = fa_verify_pool_new()
    }

    deinit {
        fa_verify_pool_free(contexts)
        EVP_PKEY_free(pkey)
    }

    /// True only when `signature` is a valid RS256 signature of `data` by this key
    /// (`fa_rs256_verify`: SHA-256, then EVP_PKEY_verify with PKCS#1 v1.5 padding on a
    /// pooled context).
    package func verifyRS256(signature: [UInt8], data: [UInt8]) -> Bool {
        guard !signature.isEmpty, signature.count <= 1024 else { return false }
        defer { ERR_clear_error() }
        let rc = data.withUnsafeBufferPointer { d in
            signature.withUnsafeBufferPointer { s in
                fa_rs256_verify(contexts, pkey, d.baseAddress, d.count, s.baseAddress, s.count)
            }
        }
        return rc == 1
    }
}

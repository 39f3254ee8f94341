import COpenSSL
import FingerAuthCore

/// A DER X.509 certificate (d2i_X509), owned by this object: the TPM endorsement key's
/// certificate that a host sends when it registers a TPM key.
///
/// `@unchecked Sendable`: the certificate and its key are set in `init` and only read
/// afterwards (verified against a store, an OAEP encryption to its key); OpenSSL 3 guards
/// the caches it fills inside an X509 on a read with its own locks.
package final class X509Certificate: @unchecked Sendable {
    let certificate: OpaquePointer
    let publicKey: OpaquePointer

    /// Parses `der` strictly (no bytes after the certificate) and takes its public key.
    package init(der: [UInt8]) throws(CryptoError) {
        guard !der.isEmpty, der.count <= 16384 else {
            throw CryptoError(operation: "certificate", reason: "empty or too long")
        }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let certificate = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            guard let start = buffer.baseAddress, let cursor, cursor - start == buffer.count else {
                X509_free(certificate)
                return nil
            }
            return certificate
        }
        guard let parsed else { throw CryptoError.last("certificate") }
        guard let key = X509_get_pubkey(parsed) else {
            X509_free(parsed)
            throw CryptoError.last("certificate public key")
        }
        certificate = parsed
        publicKey = key
    }

    deinit {
        EVP_PKEY_free(publicKey)
        X509_free(certificate)
    }

    /// True when the certified key is RSA of `bits` bits.
    package func isRSA(bits: Int32) -> Bool {
        EVP_PKEY_get_base_id(publicKey) == EVP_PKEY_RSA && EVP_PKEY_get_bits(publicKey) == bits
    }

    /// The certified public key as DER SubjectPublicKeyInfo (i2d_PUBKEY): the bytes
    /// `tpm2_readpublic -f der` writes for the same key.
    package var publicKeyDER: [UInt8]? {
        let length = i2d_PUBKEY(publicKey, nil)
        guard length > 0, length <= 16384 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(publicKey, &cursor)
        }
        return written == length ? out : nil
    }

    /// The subject as one line, for logs and `keys list`.
    package var subject: String {
        guard let name = X509_get_subject_name(certificate) else { return "" }
        var buffer = [CChar](repeating: 0, count: 256)
        guard X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// RSA-OAEP(SHA-256) encryption of `input` to the certified key with `label`.
    func oaepEncrypt(_ input: [UInt8], label: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 1024)
        let length = fa_rsa_oaep_sha256_encrypt(publicKey, label, label.count, input, input.count, &out, out.count)
        guard length > 0, length <= out.count else { throw CryptoError.last("OAEP encryption") }
        return Array(out.prefix(length))
    }
}

/// Trusted CA certificates from a PEM bundle (`--tpm-ek-ca`): an X509_STORE that
/// endorsement key certificates must chain to.
///
/// `@unchecked Sendable`: the store is filled in `init` and never changed afterwards; each
/// check makes its own X509_STORE_CTX, and OpenSSL locks the store itself where a lookup
/// touches it (X509_STORE_lock).
package final class CertificateTrust: @unchecked Sendable {
    let store: OpaquePointer
    /// How many certificates the bundle held.
    package let count: Int

    /// Loads every certificate of the PEM `bundle`; refuses a bundle without one.
    package init(pem bundle: [UInt8]) throws(CryptoError) {
        guard let store = X509_STORE_new() else { throw CryptoError.last("trust store") }
        var loaded = 0
        let ok: Bool = bundle.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return false }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                defer { X509_free(certificate) }
                guard X509_STORE_add_cert(store, certificate) == 1 else { return false }
                loaded += 1
            }
            ERR_clear_error()
            return true
        }
        guard ok, loaded > 0 else {
            X509_STORE_free(store)
            throw CryptoError(operation: "trust store", reason: "no certificate in the bundle")
        }
        self.store = store
        count = loaded
    }

    deinit { X509_STORE_free(store) }

    /// nil when `certificate` chains to a trusted CA (X509_verify_cert); else OpenSSL's reason.
    package func refusal(of certificate: X509Certificate) -> String? {
        guard let ctx = X509_STORE_CTX_new() else { return "cannot verify" }
        defer { X509_STORE_CTX_free(ctx) }
        guard X509_STORE_CTX_init(ctx, store, certificate.certificate, nil) == 1 else { return "cannot verify" }
        if X509_verify_cert(ctx) == 1 { return nil }
        let code = X509_STORE_CTX_get_error(ctx)
        ERR_clear_error()
        guard let text = X509_verify_cert_error_string(Int(code)) else { return "not trusted" }
        return String(cString: text)
    }
}

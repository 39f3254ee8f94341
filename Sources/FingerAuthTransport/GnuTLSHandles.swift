import CGnuTLS

/// Why a certificate chain or key could not be used. Messages name the file's role and
/// GnuTLS's reason, never a byte of the key.
package struct TLSCredentialError: Error, CustomStringConvertible, Sendable {
    package let message: String
    package var description: String { message }

    init(_ message: String) { self.message = message }

    init(_ what: String, code: Int32) {
        message = "\(what): " + (gnutls_strerror(code).map { String(cString: $0) } ?? "GnuTLS error \(code)")
    }
}

/// Lets GnuTLS read `bytes` as a datum without copying them (the datum's pointer is only
/// valid inside `body`; GnuTLS does not keep it past the call).
func withDatum<T>(_ bytes: [UInt8], _ body: (inout gnutls_datum_t) -> T) -> T {
    bytes.withUnsafeBufferPointer { buffer in
        var datum = gnutls_datum_t(
            data: UnsafeMutablePointer(mutating: buffer.baseAddress),
            size: UInt32(clamping: buffer.count))
        return body(&datum)
    }
}

/// A server certificate chain as GnuTLS hands it to a handshake: a `gnutls_pcert_st` array
/// (gnutls_pcert_list_import_x509_raw), leaf first, owned here and freed in deinit
/// (gnutls_pcert_deinit for each).
///
/// `@unchecked Sendable`: the array is filled in `init`, freed in `deinit` and only read
/// between: GnuTLS reads it in every handshake and never writes it.
final class CertificateChainHandle: @unchecked Sendable {
    /// Certificates accepted in one chain file.
    static let capacity = 8

    let certificates: UnsafeMutablePointer<gnutls_pcert_st>
    let count: UInt32

    /// Parses the PEM chain, sorted leaf first; refuses an empty file or more than `capacity`.
    init(pem: [UInt8]) throws(TLSCredentialError) {
        let list = UnsafeMutablePointer<gnutls_pcert_st>.allocate(capacity: Self.capacity)
        list.initialize(repeating: gnutls_pcert_st(), count: Self.capacity)
        var count = UInt32(Self.capacity)
        let flags = GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED.rawValue | GNUTLS_X509_CRT_LIST_SORT.rawValue
        let rc = withDatum(pem) { gnutls_pcert_list_import_x509_raw(list, &count, &$0, GNUTLS_X509_FMT_PEM, flags) }
        guard rc >= 0, count > 0 else {
            list.deallocate()
            if rc == GNUTLS_E_SHORT_MEMORY_BUFFER {
                throw TLSCredentialError("certificate file: more than \(Self.capacity) certificates")
            }
            throw rc < 0
                ? TLSCredentialError("certificate file", code: rc)
                : TLSCredentialError("certificate file: no certificate")
        }
        certificates = list
        self.count = count
    }

    /// The leaf's public key (not owned: it lives as long as this chain).
    var leafPublicKey: gnutls_pubkey_t? { certificates.pointee.pubkey }

    /// The leaf certificate, DER (not owned).
    var leafDER: gnutls_datum_t { certificates.pointee.cert }

    deinit {
        for i in 0..<Int(count) { gnutls_pcert_deinit(certificates + i) }
        certificates.deallocate()
    }
}

/// A private key (gnutls_privkey_t, gnutls_privkey_import_x509_raw), owned here and freed
/// in deinit (gnutls_privkey_deinit, which clears the key material).
///
/// `@unchecked Sendable`: the key is imported in `init` and freed in `deinit`; handshakes on
/// several threads sign with it at once, as GnuTLS's own credentials share one key among
/// sessions (gnutls_certificate_set_key).
final class PrivateKeyHandle: @unchecked Sendable {
    let key: gnutls_privkey_t

    /// Parses an unencrypted PEM key (PKCS#8, PKCS#1 or SEC1).
    init(pem: [UInt8]) throws(TLSCredentialError) {
        var created: gnutls_privkey_t?
        let rc = gnutls_privkey_init(&created)
        guard rc == GNUTLS_E_SUCCESS, let created else { throw TLSCredentialError("key file", code: rc) }
        let imported = withDatum(pem) { gnutls_privkey_import_x509_raw(created, &$0, GNUTLS_X509_FMT_PEM, nil, 0) }
        guard imported == GNUTLS_E_SUCCESS else {
            gnutls_privkey_deinit(created)
            throw TLSCredentialError("key file (an unencrypted PEM key is needed)", code: imported)
        }
        key = created
    }

    deinit { gnutls_privkey_deinit(key) }
}

/// A public key (gnutls_pubkey_t) derived from a private key, owned here and freed in deinit.
final class PublicKeyHandle {
    let key: gnutls_pubkey_t

    init(of privateKey: PrivateKeyHandle) throws(TLSCredentialError) {
        var created: gnutls_pubkey_t?
        let rc = gnutls_pubkey_init(&created)
        guard rc == GNUTLS_E_SUCCESS, let created else { throw TLSCredentialError("key file", code: rc) }
        let imported = gnutls_pubkey_import_privkey(created, privateKey.key, 0, 0)
        guard imported == GNUTLS_E_SUCCESS else {
            gnutls_pubkey_deinit(created)
            throw TLSCredentialError("key file", code: imported)
        }
        key = created
    }

    deinit { gnutls_pubkey_deinit(key) }
}

/// An X.509 certificate (gnutls_x509_crt_t) read from DER, owned here and freed in deinit;
/// used for what the log says about the certificate.
final class X509CertificateHandle {
    let certificate: gnutls_x509_crt_t

    init(der: gnutls_datum_t) throws(TLSCredentialError) {
        var created: gnutls_x509_crt_t?
        let rc = gnutls_x509_crt_init(&created)
        guard rc == GNUTLS_E_SUCCESS, let created else { throw TLSCredentialError("certificate file", code: rc) }
        var datum = der
        let imported = gnutls_x509_crt_import(created, &datum, GNUTLS_X509_FMT_DER)
        guard imported == GNUTLS_E_SUCCESS else {
            gnutls_x509_crt_deinit(created)
            throw TLSCredentialError("certificate file", code: imported)
        }
        certificate = created
    }

    deinit { gnutls_x509_crt_deinit(certificate) }
}

/// SHA-256 key identifier of a public key (gnutls_pubkey_get_key_id), nil when unreadable.
func keyIdentifier(_ key: gnutls_pubkey_t?) -> [UInt8]? {
    guard let key else { return nil }
    var out = [UInt8](repeating: 0, count: 64)
    var size = out.count
    let rc = gnutls_pubkey_get_key_id(key, UInt32(GNUTLS_KEYID_USE_SHA256.rawValue), &out, &size)
    guard rc == GNUTLS_E_SUCCESS, size <= out.count else { return nil }
    return Array(out.prefix(size))
}

import COpenSSL
import FingerAuthCore

#if canImport(Glibc)
import Glibc
#endif

/// A TLS server certificate made by `fingerauthd init`: a new ECDSA P-256 key and an X.509 v3
/// certificate for one DNS name or IP address (subjectAltName, what clients check), for
/// server authentication only, self-signed or signed by a CA of the admin's
/// (`CertificateIssuer`).
package struct ServerCertificate {
    /// The certificate, PEM.
    package let certificatePEM: [UInt8]
    /// The private key, unencrypted PKCS#8 PEM. Secret: write it 0600 only.
    package let keyPEM: [UInt8]

    /// What `name` is for a certificate: an IP address (`IP:`) or a DNS name (`DNS:`).
    package enum Subject: Equatable, Sendable {
        case address(String)
        case dns(String)

        /// nil when `name` is neither a numeric IPv4/IPv6 address nor a DNS name (letters,
        /// digits, `-` and inner dots, labels of at most 63, at most 253 in all).
        package init?(_ name: String) {
            var buffer = [UInt8](repeating: 0, count: 16)
            if inet_pton(AF_INET, name, &buffer) == 1 || inet_pton(AF_INET6, name, &buffer) == 1 {
                self = .address(name)
                return
            }
            let labels = name.split(separator: ".", omittingEmptySubsequences: false)
            guard !name.isEmpty, name.utf8.count <= 253,
                labels.allSatisfy({ label in
                    !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                        && label.utf8.allSatisfy {
                            $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0)
                                || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0)
                        }
                })
            else { return nil }
            self = .dns(name)
        }

        var name: String {
            switch self {
            case let .address(text), let .dns(text): return text
            }
        }

        var alternativeName: String {
            switch self {
            case let .address(text): return "IP:" + text
            case let .dns(text): return "DNS:" + text
            }
        }
    }

    /// A new key and a certificate for `subject`, valid from now for `days`, signed by
    /// `issuer`, or by its own key when `issuer` is nil.
    package static func make(for subject: Subject, days: Int, issuer: CertificateIssuer?) throws(CryptoError)
        -> ServerCertificate
    {
        guard (1...3650).contains(days) else {
            throw CryptoError(operation: "certificate", reason: "days must be 1 to 3650")
        }
        let key = try newP256Key()
        defer { EVP_PKEY_free(key) }
        guard let certificate = X509_new() else { throw CryptoError.last("certificate") }
        defer { X509_free(certificate) }
        guard X509_set_version(certificate, 2) == 1, setRandomSerial(certificate),
            X509_gmtime_adj(X509_getm_notBefore(certificate), -300) != nil,
            X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(days), 0, nil) != nil,
            X509_set_pubkey(certificate, key) == 1
        else { throw CryptoError.last("certificate") }
        guard let subjectName = X509_NAME_new() else { throw CryptoError.last("certificate name") }
        defer { X509_NAME_free(subjectName) }
        guard fa_x509_name_add_ascii(subjectName, "CN", subject.name) == 1,
            X509_set_subject_name(certificate, subjectName) == 1
        else { throw CryptoError.last("certificate name") }
        let signer = issuer?.certificate ?? certificate
        guard X509_set_issuer_name(certificate, X509_get_subject_name(signer)) == 1 else {
            throw CryptoError.last("certificate issuer")
        }
        var extensions: [(Int32, String)] = [
            (NID_subject_alt_name, subject.alternativeName),
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
        ]
        if issuer != nil { extensions.append((NID_authority_key_identifier, "keyid:always")) }
        for (nid, value) in extensions {
            guard fa_x509_add_extension(certificate, signer, nid, value) == 1 else {
                throw CryptoError.last("certificate extension \(value)")
            }
        }
        guard X509_sign(certificate, issuer?.key ?? key, EVP_sha256()) > 0 else {
            throw CryptoError.last("certificate signature")
        }
        let certificatePEM = try pem("certificate") { PEM_write_bio_X509($0, certificate) }
        let keyPEM = try pem("key") { PEM_write_bio_PKCS8PrivateKey($0, key, nil, nil, 0, nil, nil) }
        return ServerCertificate(certificatePEM: certificatePEM, keyPEM: keyPEM)
    }

    /// EC key generation on the named group P-256 (EVP_EC_gen is a macro).
    private static func newP256Key() throws(CryptoError) -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError.last("P-256 key") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw CryptoError.last("P-256 key") }
        return key
    }

    /// A positive random serial of 127 bits (RFC 5280: at most 20 bytes, unique per issuer).
    private static func setRandomSerial(_ certificate: OpaquePointer) -> Bool {
        guard let number = BN_new() else { return false }
        defer { BN_free(number) }
        guard BN_rand(number, 127, 0, 0) == 1, let serial = BN_to_ASN1_INTEGER(number, nil) else { return false }
        defer { ASN1_INTEGER_free(serial) }
        return X509_set_serialNumber(certificate, serial) == 1
    }

    /// What `write` puts into a memory BIO.
    private static func pem(_ what: String, _ write: (OpaquePointer) -> Int32) throws(CryptoError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.last(what) }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw CryptoError.last(what) }
        var data: UnsafeMutablePointer<CChar>?
        let length = fa_bio_mem_data(bio, &data)
        guard length > 0, let data else { throw CryptoError.last(what) }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }
}

/// A CA of the admin's: its certificate and private key (PEM; an encrypted key is refused
/// without asking for a passphrase), checked to belong together and to be a CA.
package final class CertificateIssuer {
    let certificate: OpaquePointer
    let key: OpaquePointer

    package init(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(CryptoError) {
        guard certificatePEM.count < 256 * 1024, keyPEM.count < 64 * 1024 else {
            throw CryptoError(operation: "CA", reason: "file too large")
        }
        let certificate: OpaquePointer? = certificatePEM.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let certificate else { throw CryptoError.last("CA certificate") }
        let key: OpaquePointer? = keyPEM.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let key else {
            X509_free(certificate)
            throw CryptoError.last("CA key (an encrypted key is not supported)")
        }
        self.certificate = certificate
        self.key = key
        guard X509_check_private_key(certificate, key) == 1 else {
            ERR_clear_error()
            throw CryptoError(operation: "CA", reason: "the key does not belong to the certificate")
        }
        guard X509_check_ca(certificate) > 0 else {
            throw CryptoError(
                operation: "CA", reason: "the certificate is not a CA certificate (basicConstraints CA:TRUE)")
        }
    }

    deinit {
        EVP_PKEY_free(key)
        X509_free(certificate)
    }
}

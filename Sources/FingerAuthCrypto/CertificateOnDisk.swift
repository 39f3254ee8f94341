import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// A certificate and key found where `fingerauthd init` would write them (an earlier init,
/// a reinstall after a purge): what they are, so that init can reuse a pair that is what it
/// would make now, or say why not.
package struct CertificateOnDisk: Sendable {
    /// The certificate's common name (init writes the name the hosts use there).
    package let commonName: String
    /// subjectAltName (or, lacking one, the common name) covers the subject init was asked for.
    package let coversSubject: Bool
    /// The key is the certificate's.
    package let keyMatches: Bool
    /// An ECDSA P-256 key, as init makes.
    package let isP256: Bool
    /// Signed as init was asked to sign: by its own key, or by the given CA.
    package let signedAsAsked: Bool
    /// Whole days until it expires; negative once it has.
    package let daysLeft: Int
    /// Its notAfter, `YYYY-MM-DD` (UTC).
    package let expiry: String

    /// Reads the pair; throws when either does not parse (an encrypted key does not).
    package init(
        certificatePEM: [UInt8], keyPEM: [UInt8], subject: ServerCertificate.Subject, issuer: CertificateIssuer?
    ) throws(CryptoError) {
        guard let certificate = Self.readCertificate(certificatePEM) else { throw CryptoError.last("certificate") }
        defer { X509_free(certificate) }
        let key: OpaquePointer? = keyPEM.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let key else { throw CryptoError.last("key (an encrypted key is not supported)") }
        defer { EVP_PKEY_free(key) }

        var name = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, &name, 256)
        // Printable ASCII only: the name goes into a message.
        commonName = String(
            decoding: name.prefix(max(0, min(64, Int(length)))).map { UInt8(bitPattern: $0) }
                .filter { $0 > 0x20 && $0 < 0x7f }, as: UTF8.self)
        switch subject {
        case let .address(text): coversSubject = X509_check_ip_asc(certificate, text, 0) == 1
        case let .dns(text): coversSubject = X509_check_host(certificate, text, text.utf8.count, 0, nil) == 1
        }
        keyMatches = X509_check_private_key(certificate, key) == 1
        var group = [CChar](repeating: 0, count: 64)
        var groupLength = 0
        isP256 =
            EVP_PKEY_get_base_id(key) == EVP_PKEY_EC
            && EVP_PKEY_get_group_name(key, &group, group.count, &groupLength) == 1
            && String(decoding: group.prefix(groupLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        if let issuer {
            signedAsAsked = X509_verify(certificate, X509_get0_pubkey(issuer.certificate)) == 1
        } else {
            signedAsAsked = X509_self_signed(certificate, 1) == 1
        }
        var days: Int32 = 0
        var seconds: Int32 = 0
        let notAfter = X509_get0_notAfter(certificate)
        daysLeft = ASN1_TIME_diff(&days, &seconds, nil, notAfter) == 1 ? Int(days) - (seconds < 0 ? 1 : 0) : -1
        var date = tm()
        if ASN1_TIME_to_tm(notAfter, &date) == 1 {
            func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
            expiry = "\(Int(date.tm_year) + 1900)-\(two(date.tm_mon + 1))-\(two(date.tm_mday))"
        } else {
            expiry = "unknown"
        }
        ERR_clear_error()
    }

    /// Why init cannot reuse the pair for `subject`, or nil when it can.
    package func refusal(for subject: ServerCertificate.Subject, issuer: String?) -> String? {
        if !coversSubject {
            return "it is for \(commonName.isEmpty ? "another name" : "'\(commonName)'"), "
                + "not \(subject.name)"
        }
        if !keyMatches { return "the key beside it is not its key" }
        if !isP256 { return "its key is not ECDSA P-256 (not one init made)" }
        if !signedAsAsked { return issuer.map { "it is not signed by the CA \($0)" } ?? "it is not self-signed" }
        if daysLeft < 1 { return daysLeft < 0 ? "it expired on \(expiry)" : "it expires on \(expiry)" }
        return nil
    }

    private static func readCertificate(_ pem: [UInt8]) -> OpaquePointer? {
        pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, { _, _, _, _ in -1 }, nil)
        }
    }
}

import CGnuTLS
import FingerAuthDomain

#if canImport(Glibc)
import Glibc
#endif

/// A server certificate chain and its private key as GnuTLS hands them to a handshake,
/// checked to belong together. Immutable; made at start and on every SIGHUP from a fresh
/// `TLSMaterial` (whose key bytes are cleared when it goes). Each GnuTLS handle has one
/// owner here and is freed when the last holder lets go: the `CertificateSlot`, or a
/// connection whose handshake was given this set.
///
/// `@unchecked Sendable`: every property is a `let` set in `init`; the handles it holds are
/// read-only after their own `init` (see each).
package final class TLSCredentials: @unchecked Sendable {
    let chain: CertificateChainHandle
    let key: PrivateKeyHandle
    /// For an RSA key (of at least 2048 bits), the same key signing through OpenSSL
    /// (`HandshakeSigner`); nil otherwise, and GnuTLS signs with `key` itself.
    let signer: HandshakeSigner?
    /// The leaf certificate's subject, RFC 4514 (`CN=auth.example.com,O=…`).
    package let subject: String
    /// The leaf's serial number, upper-case hex as `openssl x509 -serial` prints it.
    package let serial: String
    /// The leaf's notAfter, `YYYY-MM-DD HH:MM:SS UTC`.
    package let notAfter: String

    /// Parses both PEM files of `material`; refuses a key that does not belong to the
    /// leaf certificate (their SHA-256 key identifiers differ).
    package init(_ material: TLSMaterial) throws(TLSCredentialError) {
        chain = try CertificateChainHandle(pem: material.certificatePEM)
        key = try PrivateKeyHandle(pem: material.keyPEM)
        let derived = try PublicKeyHandle(of: key)
        guard let keyID = keyIdentifier(derived.key), let certificateID = keyIdentifier(chain.leafPublicKey) else {
            throw TLSCredentialError("cannot compare the key with the certificate")
        }
        let leaf = try X509CertificateHandle(der: chain.leafDER)
        subject = Self.subject(of: leaf)
        guard keyID == certificateID else {
            throw TLSCredentialError("the key does not belong to the certificate (subject \(subject))")
        }
        signer =
            gnutls_privkey_get_pk_algorithm(key.key, nil) == Int32(bitPattern: GNUTLS_PK_RSA.rawValue)
            ? try? HandshakeSigner(pem: material.keyPEM) : nil
        serial = Self.serial(of: leaf)
        notAfter = Self.utc(gnutls_x509_crt_get_expiration_time(leaf.certificate))
    }

    /// The key handshakes sign with: OpenSSL's for RSA, GnuTLS's own otherwise.
    var handshakeKey: gnutls_privkey_t { signer?.key ?? key.key }

    /// `subject …, serial …, not after …`, for log lines.
    package var summary: String { "subject \(subject), serial \(serial), not after \(notAfter)" }

    private static func subject(of leaf: X509CertificateHandle) -> String {
        var datum = gnutls_datum_t()
        guard gnutls_x509_crt_get_dn3(leaf.certificate, &datum, 0) == GNUTLS_E_SUCCESS, let data = datum.data else {
            return "-"
        }
        defer { fa_gnutls_free_datum(&datum) }
        let text = String(decoding: UnsafeBufferPointer(start: data, count: Int(datum.size)), as: UTF8.self)
        return String(LogText.printable(text).prefix(200))
    }

    private static func serial(of leaf: X509CertificateHandle) -> String {
        var bytes = [UInt8](repeating: 0, count: 40)
        var size = bytes.count
        guard gnutls_x509_crt_get_serial(leaf.certificate, &bytes, &size) == GNUTLS_E_SUCCESS, size <= bytes.count
        else {
            return "-"
        }
        // DER puts a 00 before a serial whose top bit is set; openssl does not print it.
        var value = bytes.prefix(size)
        while value.count > 1, value.first == 0 { value = value.dropFirst() }
        let digits = Array("0123456789ABCDEF")
        return String(value.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] })
    }

    private static func utc(_ time: time_t) -> String {
        var seconds = time
        var parts = tm()
        guard time >= 0, gmtime_r(&seconds, &parts) != nil else { return "-" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }
}

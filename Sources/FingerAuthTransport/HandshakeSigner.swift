import CGnuTLS
import FingerAuthCrypto

#if canImport(Glibc)
import Glibc
#endif

/// The server's RSA key as GnuTLS uses it in handshakes, with the signature made by
/// OpenSSL (gnutls_privkey_import_ext4): GnuTLS still runs the handshake, hashes the
/// transcript and encodes the DigestInfo; only the private-key operation moves.
///
/// Why: the signature is most of what a handshake costs fingerauthd, and every login
/// helper makes a new connection. Measured on this project's 2-core VM: GnuTLS (nettle's
/// constant-time code over libgmp) signs RSA-2048 in 2.6 ms, OpenSSL in 0.88 ms; a whole
/// handshake cost the server 5.2–6.2 ms of CPU. OpenSSL's RSA is constant-time with
/// blinding, as every OpenSSL-based TLS server uses it.
///
/// Only what TLS 1.2 and 1.3 ask of an RSA certificate is offered: RSASSA-PKCS1-v1_5 (over a
/// DigestInfo of SHA-256/384/512) and RSASSA-PSS with an rsaEncryption key (`rsa_pss_rsae_*`,
/// salt as long as the hash). Keys of other kinds keep GnuTLS's own signing.
///
/// `@unchecked Sendable`: handshakes on libmicrohttpd's threads sign with it at once. Both
/// keys are set in `init` and never replaced; GnuTLS calls the sign callback with no state
/// of its own, and every OpenSSL signature takes an EVP_MD_CTX of its own.
final class HandshakeSigner: @unchecked Sendable {
    let key: gnutls_privkey_t
    private let signer: Signer

    /// Holds the OpenSSL key; the userdata of GnuTLS's callbacks (unretained: the
    /// `HandshakeSigner` owns both and frees the GnuTLS key first).
    ///
    /// `@unchecked Sendable`: the key is set in `init` and only read (see the class).
    final class Signer: @unchecked Sendable {
        let rsa: RSAPrivateKey
        init(_ rsa: RSAPrivateKey) { self.rsa = rsa }
    }

    /// The key of `pem` (unencrypted PEM, RSA of at least 2048 bits) behind a GnuTLS key.
    init(pem: [UInt8]) throws(TLSCredentialError) {
        let rsa: RSAPrivateKey
        do {
            rsa = try RSAPrivateKey(pem: pem)
        } catch {
            throw TLSCredentialError("key file (OpenSSL): \(error)")
        }
        signer = Signer(rsa)
        var created: gnutls_privkey_t?
        let rc = gnutls_privkey_init(&created)
        guard rc == GNUTLS_E_SUCCESS, let created else { throw TLSCredentialError("key file", code: rc) }
        let imported = gnutls_privkey_import_ext4(
            created, Unmanaged.passUnretained(signer).toOpaque(), nil,
            handshakeSignHash, nil, nil, handshakeKeyInfo, 0)
        guard imported == GNUTLS_E_SUCCESS else {
            gnutls_privkey_deinit(created)
            throw TLSCredentialError("key file (external signer)", code: imported)
        }
        key = created
    }

    deinit { gnutls_privkey_deinit(key) }

    /// What a signature algorithm asks of the key; nil for those not offered.
    enum Operation: Equatable {
        case pkcs1
        case pss(RSAPrivateKey.PSSDigest)

        init?(_ algorithm: gnutls_sign_algorithm_t) {
            switch algorithm {
            // GnuTLS hands PKCS#1 v1.5 signatures over as RSA_RAW with the DigestInfo.
            case GNUTLS_SIGN_RSA_RAW: self = .pkcs1
            case GNUTLS_SIGN_RSA_PSS_RSAE_SHA256: self = .pss(.sha256)
            case GNUTLS_SIGN_RSA_PSS_RSAE_SHA384: self = .pss(.sha384)
            case GNUTLS_SIGN_RSA_PSS_RSAE_SHA512: self = .pss(.sha512)
            default: return nil
            }
        }

        /// The algorithms GnuTLS may choose for this key (GNUTLS_PRIVKEY_INFO_HAVE_SIGN_ALGO).
        static func offers(_ algorithm: gnutls_sign_algorithm_t) -> Bool {
            switch algorithm {
            case GNUTLS_SIGN_RSA_SHA256, GNUTLS_SIGN_RSA_SHA384, GNUTLS_SIGN_RSA_SHA512, GNUTLS_SIGN_RSA_RAW,
                GNUTLS_SIGN_RSA_PSS_RSAE_SHA256, GNUTLS_SIGN_RSA_PSS_RSAE_SHA384, GNUTLS_SIGN_RSA_PSS_RSAE_SHA512:
                return true
            default:
                return false
            }
        }
    }
}

/// gnutls_privkey_info_func: the key is RSA, of its size, and offers the algorithms above.
private func handshakeKeyInfo(_ key: gnutls_privkey_t?, _ flags: UInt32, _ userdata: UnsafeMutableRawPointer?) -> Int32
{
    guard let userdata else { return GNUTLS_E_INVALID_REQUEST }
    let signer = Unmanaged<HandshakeSigner.Signer>.fromOpaque(userdata).takeUnretainedValue()
    if flags & fa_gnutls_info_have_sign_algo() != 0 {
        let algorithm = gnutls_sign_algorithm_t(rawValue: fa_gnutls_flags_to_sign_algo(flags))
        return HandshakeSigner.Operation.offers(algorithm) ? 1 : 0
    }
    if flags & fa_gnutls_info_pk_algo_bits() != 0 { return Int32(clamping: signer.rsa.bits) }
    if flags & fa_gnutls_info_pk_algo() != 0 { return Int32(bitPattern: GNUTLS_PK_RSA.rawValue) }
    return GNUTLS_E_UNIMPLEMENTED_FEATURE
}

/// gnutls_privkey_sign_hash_func: signs what GnuTLS prepared (a DigestInfo for PKCS#1 v1.5,
/// the digest for PSS) with OpenSSL; the signature goes into memory from gnutls_malloc.
private func handshakeSignHash(
    _ key: gnutls_privkey_t?, _ algorithm: gnutls_sign_algorithm_t,
    _ userdata: UnsafeMutableRawPointer?, _ flags: UInt32,
    _ input: UnsafePointer<gnutls_datum_t>?,
    _ signature: UnsafeMutablePointer<gnutls_datum_t>?
) -> Int32 {
    guard let userdata, let input, let signature, let operation = HandshakeSigner.Operation(algorithm) else {
        return GNUTLS_E_INVALID_REQUEST
    }
    let signer = Unmanaged<HandshakeSigner.Signer>.fromOpaque(userdata).takeUnretainedValue()
    let bytes = input.pointee.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(input.pointee.size))) } ?? []
    let signed: [UInt8]
    do {
        switch operation {
        case .pkcs1: signed = try signer.rsa.signPKCS1(digestInfo: bytes)
        case let .pss(hash): signed = try signer.rsa.signPSS(digest: bytes, hash)
        }
    } catch {
        return GNUTLS_E_PK_SIGN_FAILED
    }
    guard !signed.isEmpty, let out = fa_gnutls_malloc(signed.count) else { return GNUTLS_E_MEMORY_ERROR }
    signed.withUnsafeBytes { raw in
        if let base = raw.baseAddress { out.copyMemory(from: base, byteCount: raw.count) }
    }
    signature.pointee.data = out.assumingMemoryBound(to: UInt8.self)
    signature.pointee.size = UInt32(signed.count)
    return GNUTLS_E_SUCCESS
}

import CGnuTLS
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

/// The certificate set new TLS handshakes get. `replace(with:)` (SIGHUP) swaps it whole;
/// handshakes under way and connections already established keep the set they were given,
/// because each connection holds it (`ConnectionRecord.credentials`) until it closes.
/// An old set is freed when the last of those holders lets go.
///
/// `@unchecked Sendable`: `credentials` is read and replaced only under `lock`.
final class CertificateSlot: @unchecked Sendable {
    private let lock = Lock()
    private var credentials: TLSCredentials

    init(_ credentials: TLSCredentials) {
        self.credentials = credentials
    }

    var current: TLSCredentials { lock.withLock { credentials } }

    /// Puts `new` in place; returns the set it replaced (freed by the caller's release,
    /// outside the lock, unless connections still hold it).
    func replace(with new: TLSCredentials) -> TLSCredentials {
        lock.withLock {
            let old = credentials
            credentials = new
            return old
        }
    }
}

/// MHD_OPTION_HTTPS_CERT_CALLBACK (a gnutls_certificate_retrieve_function2): called once
/// per handshake on the worker thread that runs it. The session's pointer is the
/// libmicrohttpd connection (daemon.c, new_connection_prepare_: gnutls_session_set_ptr),
/// whose record takes a hold on the set before GnuTLS gets its pointers. GnuTLS does not
/// free what this callback returns (it is marked as not its own), so the hold is what
/// keeps it valid. Returning -1 fails the handshake.
func retrieveCertificate(
    session: gnutls_session_t?, _: UnsafePointer<gnutls_datum_t>?, _: Int32,
    _: UnsafePointer<gnutls_pk_algorithm_t>?, _: Int32,
    chain: UnsafeMutablePointer<UnsafeMutablePointer<gnutls_pcert_st>?>?,
    chainLength: UnsafeMutablePointer<UInt32>?,
    key: UnsafeMutablePointer<gnutls_privkey_t?>?
) -> Int32 {
    guard let session, let chain, let chainLength, let key,
        let connection = gnutls_session_get_ptr(session),
        let credentials = ConnectionWatch.credentialsForHandshake(OpaquePointer(connection))
    else { return -1 }
    chain.pointee = credentials.chain.certificates
    chainLength.pointee = credentials.chain.count
    key.pointee = credentials.handshakeKey
    return 0
}

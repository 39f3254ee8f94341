import CLibSSL
import FingerAuthCore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The TLS side of the client, one per `HTTPConnection`: OpenSSL's SSL_CTX with TLS 1.2
/// or later, the peer's certificate chain verified against `cafile` (else the system's CA
/// store), the host name checked, and the public-key pin when one is set.
final class TLSClientContext {
    private let context: OpaquePointer
    private let pin: PublicKeyPin?

    /// Nil with the reason when the CA file or the pin cannot be used.
    static func make(settings: HTTPSettings) -> Result<TLSClientContext, HTTPFailure> {
        func fail(_ why: String) -> Result<TLSClientContext, HTTPFailure> { .failure(.tls(why)) }
        var pin: PublicKeyPin?
        if let text = settings.pinnedPublicKey {
            guard let parsed = PublicKeyPin(text) else {
                return fail("pinned_pubkey is neither sha256//… nor a public key file")
            }
            pin = parsed
        }
        guard let method = TLS_client_method(), let context = SSL_CTX_new(method) else { return fail("no TLS context") }
        let made = TLSClientContext(context: context, pin: pin)
        guard fa_ssl_ctx_min_tls12(context) == 1 else { return fail("cannot require TLS 1.2") }
        fa_ssl_ctx_client_options(context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if let caFile = settings.caFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                return fail("cannot read the CA file \(caFile)")
            }
        } else if SSL_CTX_set_default_verify_paths(context) != 1 {
            return fail("cannot read the system's CA store")
        }
        return .success(made)
    }

    private init(context: OpaquePointer, pin: PublicKeyPin?) {
        self.context = context
        self.pin = pin
    }

    deinit { SSL_CTX_free(context) }

    /// The handshake on connected socket `fd` for `host`, offering `session` to resume;
    /// the TLS object, or why it failed (certificate, name, pin, time).
    func handshake(fd: Int32, host: String, session: OpaquePointer?, until deadline: Deadline, watch: ProgressWatch)
        -> Result<
            OpaquePointer, HTTPFailure
        >
    {
        func fail(_ kind: HTTPFailure.Kind, _ why: String) -> Result<OpaquePointer, HTTPFailure> {
            .failure(
                HTTPFailure(
                    kind: kind,
                    message: kind == .timeout
                        ? "authenticator timed out: \(why)" : "TLS failure with the authenticator: \(why)"))
        }
        guard let ssl = SSL_new(context) else { return fail(.tls, "no TLS session") }
        var isIP = in6_addr()
        let literal = host.withCString { inet_pton(AF_INET, $0, &isIP) == 1 || inet_pton(AF_INET6, $0, &isIP) == 1 }
        var ok = SSL_set_fd(ssl, fd) == 1 && fa_ssl_expect_host(ssl, host, literal ? 1 : 0) == 1
        if ok && !literal { ok = fa_ssl_set_server_name(ssl, host) == 1 }
        if ok, let session { _ = SSL_set_session(ssl, session) }
        guard ok else {
            SSL_free(ssl)
            return fail(.tls, "cannot set up the TLS session")
        }
        while true {
            let result = SSL_connect(ssl)
            if result == 1 { break }
            let code = SSL_get_error(ssl, result)
            let events: Int16
            switch code {
            case SSL_ERROR_WANT_READ: events = Int16(POLLIN)
            case SSL_ERROR_WANT_WRITE: events = Int16(POLLOUT)
            default:
                let verify = SSL_get_verify_result(ssl)
                var text = [CChar](repeating: 0, count: 256)
                fa_ssl_error_text(&text, text.count)
                SSL_free(ssl)
                if verify != X509_V_OK { return .failure(.certificate(code: Int(verify))) }
                let detail = cText(text)
                return fail(.tls, "the handshake failed (" + (detail.isEmpty ? "connection closed" : detail) + ")")
            }
            guard ClientStream.poll(fd, events: events, until: deadline, watch: watch) else {
                SSL_free(ssl)
                return fail(.timeout, "the TLS handshake did not finish in time")
            }
        }
        if let pin {
            var spki = [UInt8](repeating: 0, count: 8192)
            let length = fa_ssl_peer_spki(ssl, &spki, Int32(spki.count))
            guard length > 0, pin.matches(Array(spki.prefix(Int(length)))) else {
                SSL_free(ssl)
                return .failure(.pinMismatch)
            }
        }
        return .success(ssl)
    }

    /// A short text that changes whenever what the server is trusted by changes (CA file
    /// contents, pin): a saved session is only offered under the same trust.
    static func trustFingerprint(settings: HTTPSettings) -> [UInt8]? {
        var material = Array("pin:\(settings.pinnedPublicKey ?? "-")\nca:".utf8)
        if let caFile = settings.caFile {
            guard let bytes = readSmallFile(caFile, limit: 4 * 1024 * 1024) else { return nil }
            material += bytes
        } else {
            material += Array("system".utf8)
        }
        var digest = [UInt8](repeating: 0, count: 32)
        guard fa_sha256(material, material.count, &digest) == 1 else { return nil }
        return digest
    }
}

/// `pinned_pubkey`: one or more `sha256//BASE64` hashes of the server's public key
/// (SubjectPublicKeyInfo, DER), separated by `;`, or the path of a PEM or DER public key.
struct PublicKeyPin {
    private let hashes: [[UInt8]]
    private let key: [UInt8]?

    init?(_ text: String) {
        if text.hasPrefix("sha256//") {
            var hashes: [[UInt8]] = []
            for part in text.split(separator: ";") {
                guard part.hasPrefix("sha256//") else { return nil }
                // standard base64 to the URL alphabet Base64URL reads
                let url = String(
                    part.dropFirst(8).compactMap { c -> Character? in
                        c == "+" ? "-" : c == "/" ? "_" : c == "=" ? nil : c
                    })
                guard let bytes = Base64URL.decode(url), bytes.count == 32 else { return nil }
                hashes.append(bytes)
            }
            self.hashes = hashes
            key = nil
        } else {
            guard let bytes = readSmallFile(text, limit: 64 * 1024) else { return nil }
            var spki = [UInt8](repeating: 0, count: 8192)
            let length = fa_spki_from_key_file(bytes, Int32(bytes.count), &spki, Int32(spki.count))
            guard length > 0 else { return nil }
            hashes = []
            key = Array(spki.prefix(Int(length)))
        }
    }

    func matches(_ spki: [UInt8]) -> Bool {
        if let key { return key == spki }
        var digest = [UInt8](repeating: 0, count: 32)
        guard fa_sha256(spki, spki.count, &digest) == 1 else { return false }
        return hashes.contains(digest)
    }
}

/// A regular file's bytes, at most `limit` of them; nil when it cannot be read or is larger.
func readSmallFile(_ path: String, limit: Int) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= limit else { return nil }
    var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
    var filled = 0
    while filled < bytes.count {
        let n = bytes.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress.map { $0 + filled }, raw.count - filled)
        }
        if n > 0 { filled += n } else if n < 0 && errno == EINTR { continue } else { break }
    }
    return filled == bytes.count ? bytes : nil
}

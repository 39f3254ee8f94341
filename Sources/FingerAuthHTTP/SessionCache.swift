import CLibSSL
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The TLS session a new connection offers to resume: the last one of this process, else
/// (for the login helper, one process per login) the one a previous login left in
/// `HTTPSettings.sessionDirectory`.
///
/// A saved session is a file of its own per authenticator URL, root-only (0600 in a 0700
/// directory, both owned by root; anything else is ignored, never repaired), replaced
/// by each connection that got a newer ticket, and offered only while all of this holds:
/// the same URL, the same trust (the CA file's bytes and the pin, `trustFingerprint`), at
/// most `maxAgeSeconds` old and within the ticket's own lifetime. A resumed session is
/// still checked against the pin. What the file holds (the session's secret) is never
/// logged: failures here are silent, and the connection makes a full handshake.
final class SessionCache {
    /// The longest a saved session is offered, whatever the server's ticket says.
    static let maxAgeSeconds: Int64 = 3600
    static let magic = "fingerauth-tls-session 1"

    private let settings: HTTPSettings
    private var trust: [UInt8]??
    private var last: OpaquePointer?
    private var lastURL: String?

    init(settings: HTTPSettings) { self.settings = settings }

    deinit { if let last { SSL_SESSION_free(last) } }

    /// The session to offer for `url`, retained (SSL_SESSION_free), or nil.
    func load(for url: AuthenticatorURL) -> OpaquePointer? {
        if let last, lastURL == url.text, SSL_SESSION_up_ref(last) == 1 { return last }
        guard let path = path(for: url), let fingerprint = trustFingerprint() else { return nil }
        guard (try? SafeFile.checkDirectory(directory(), rule: .privateDirectory)) != nil,
            let bytes = try? SafeFile.read(path, rule: FileRule(forbiddenBits: 0o077, maxBytes: 16 * 1024)),
            let newline = bytes.firstIndex(of: 10)
        else { return nil }
        let fields = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ")
        // magic (two words), saved-at, trust, url
        guard fields.count == 5, "\(fields[0]) \(fields[1])" == SessionCache.magic, let savedAt = Int64(fields[2]),
            fields[3] == Hex.lowercase(fingerprint), fields[4] == url.text
        else { return nil }
        let now = Int64(time(nil))
        guard savedAt <= now, now - savedAt < SessionCache.maxAgeSeconds else { return nil }
        let der = Array(bytes[(newline + 1)...])
        guard let session = fa_ssl_session_decode(der, der.count) else { return nil }
        let born = Int64(SSL_SESSION_get_time(session))
        let lifetime = Int64(SSL_SESSION_get_timeout(session))
        guard SSL_SESSION_is_resumable(session) == 1, born <= now, now - born < lifetime else {
            SSL_SESSION_free(session)
            return nil
        }
        return session
    }

    /// Keeps the session `stream` can be resumed with (when the server gave a ticket) for
    /// the next connection of this process and, with a session directory, of the next login.
    func save(from stream: ClientStream) {
        let url = stream.url
        guard let session = stream.resumableSession() else { return }
        if session == last && lastURL == url.text {
            SSL_SESSION_free(session) // no newer ticket since the last save
            return
        }
        if let last { SSL_SESSION_free(last) }
        last = session
        lastURL = url.text
        guard let path = path(for: url), let fingerprint = trustFingerprint() else { return }
        var der = [UInt8](repeating: 0, count: 16 * 1024 - 512)
        let length = fa_ssl_session_encode(session, &der, Int32(der.count))
        guard length > 0 else { return }
        let head = "\(SessionCache.magic) \(Int64(time(nil))) \(Hex.lowercase(fingerprint)) \(url.text)\n"
        let dir = directory()
        if (try? SafeFile.checkDirectory(dir, rule: .privateDirectory)) == nil {
            guard !SafeFile.exists(dir), (try? SafeFile.makeDirectory(dir, mode: 0o700)) != nil else { return }
        }
        removeStaleDrafts(in: dir)
        _ = try? SafeFile.writeAtomically(path, Array(head.utf8) + der.prefix(Int(length)), mode: 0o600, durable: false)
    }

    /// Removes the drafts (`NAME.session.tmp.PID.N`, SafeFile's temporary files) of helpers
    /// that ended between a draft's creation and its rename: a helper that could not open
    /// the reader or load the key exits at once, its warm-up thread perhaps mid-save. The
    /// folder is root-only, so its names are root's own.
    private func removeStaleDrafts(in directory: String) {
        for name in SafeFile.list(directory) {
            let parts = name.split(separator: ".")
            guard parts.count == 5, parts[1] == "session", parts[2] == "tmp", let pid = Int32(parts[3]), pid > 0,
                pid != getpid(), kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            _ = try? SafeFile.remove(directory + "/" + name)
        }
    }

    private func directory() -> String { settings.sessionDirectory ?? "" }

    /// `<directory>/<first 16 bytes of SHA-256(url), hex>.session`; nil without a directory.
    private func path(for url: AuthenticatorURL) -> String? {
        guard let dir = settings.sessionDirectory, !dir.isEmpty else { return nil }
        let text = Array(url.text.utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        guard fa_sha256(text, text.count, &digest) == 1 else { return nil }
        return dir + "/" + Hex.lowercase(Array(digest.prefix(16))) + ".session"
    }

    private func trustFingerprint() -> [UInt8]? {
        if let trust { return trust }
        let computed = TLSClientContext.trustFingerprint(settings: settings)
        trust = .some(computed)
        return computed
    }
}

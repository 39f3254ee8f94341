import CGnuTLS
import CMicroHTTPD

/// TLS 1.3 session tickets for fingerauthd's connections: a client that logged in before
/// resumes with the ticket it got then, and the handshake needs no certificate signature
/// on either side (a login host opens a new connection per login).
///
/// libmicrohttpd 0.9.75 has no option for tickets, but it creates each connection's GnuTLS
/// session before it calls NOTIFY_CONNECTION STARTED and starts the handshake only after:
/// `enable(on:)`, called there, turns tickets on for that session with the key made here.
/// The key lives in this process only (a restart makes every ticket void: clients fall back
/// to a full handshake), and GnuTLS derives the key that seals tickets from it anew every
/// `lifetimeSeconds`, so a ticket is no use past about twice its lifetime.
///
/// `@unchecked Sendable`: `key` is written once in `init` and only read afterwards, from
/// libmicrohttpd's threads (gnutls_session_ticket_enable_server copies it).
final class SessionTickets: @unchecked Sendable {
    /// Seconds a ticket may be used for (GnuTLS's cache expiration of the session).
    let lifetimeSeconds: Int32
    private var key = gnutls_datum_t()

    /// A fresh random ticket key; nil when GnuTLS cannot make one.
    init?(lifetimeSeconds: Int32) {
        self.lifetimeSeconds = lifetimeSeconds
        guard gnutls_session_ticket_key_generate(&key) == GNUTLS_E_SUCCESS else { return nil }
    }

    deinit {
        if let data = key.data { gnutls_memset(data, 0, Int(key.size)) }
        fa_gnutls_free_datum(&key)
    }

    /// Turns tickets on for the TLS session of `connection`, whose handshake has not begun.
    /// False when the connection has no TLS session or GnuTLS refused.
    @discardableResult
    func enable(on connection: OpaquePointer) -> Bool {
        guard let session = fa_mhd_tls_session(connection) else { return false }
        let tls = OpaquePointer(session)
        guard gnutls_session_ticket_enable_server(tls, &key) == GNUTLS_E_SUCCESS else { return false }
        gnutls_db_set_cache_expiration(tls, lifetimeSeconds)
        return true
    }
}

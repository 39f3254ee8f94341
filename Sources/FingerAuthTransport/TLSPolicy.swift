/// What fingerauthd's TLS offers, as a GnuTLS priority string for
/// MHD_OPTION_HTTPS_PRIORITIES: TLS 1.3, and TLS 1.2 with ECDHE key exchange and AEAD
/// ciphers only. `-KX-ALL` removes every TLS 1.2 key exchange (static RSA, DHE, PSK, SRP,
/// anonymous) before ECDHE-ECDSA and ECDHE-RSA come back; `-CIPHER-ALL` and `-MAC-ALL`
/// remove CBC and every HMAC-authenticated cipher before AES-GCM and ChaCha20-Poly1305
/// (MAC "AEAD") come back. TLS 1.3 key exchange is always (EC)DHE; its CCM suite stays out.
/// X25519 comes first among the groups: it is the key share OpenSSL clients (the login
/// helper's libssl) send, and GnuTLS's default order (P-256 first, with the server's
/// precedence) answered them with a HelloRetryRequest — a second round trip per login.
package enum TLSPolicy {
    package static let priorities =
        "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:" + "-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"
        + "-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD:"
        + "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1:%SERVER_PRECEDENCE:%NO_TICKETS_TLS12"
}

/// The text of `fingerauthd --help`.
enum Usage {
    static let text = """
    fingerauthd: the FingerAuth reference authenticator

    Usage:
      fingerauthd serve --listen ADDR:PORT --db PATH --audience AUD
                        [--tls-cert FILE --tls-key FILE] [--max-ttl SECONDS] [--skew SECONDS]
          Serve the HTTP API. ADDR is a numeric IPv4 address or [IPv6]; PORT 0 picks a free
          port. Without TLS only a loopback address is allowed. Prints one line
          "listening on URL" once ready; SIGTERM or SIGINT stops it.
          --max-ttl  longest accepted token lifetime, exp - iat (default 300, at most 300)
          --skew     tolerated clock difference (default 30, at most 300)
      fingerauthd token create --host HOST --db PATH
          Create an enrollment token for HOST and print it (only its SHA-256 is stored).
      fingerauthd keys list --db PATH [--json]
          List registered keys: kid, user, host, status, created.
      fingerauthd keys revoke --kid KID --db PATH
          Revoke a key; tokens signed by it are refused from now on.
      fingerauthd --help

    Exit status: 0 success, 1 failure, 2 usage error.
    """
}

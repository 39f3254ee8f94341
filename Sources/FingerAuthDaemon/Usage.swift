/// The text of `fingerauthd --help`, and of `fingerauthd COMMAND --help` (one command's
/// part of it).
enum Usage {
    /// The usage of the command named by `words` (`["keys", "list"]`); of every command of
    /// a group for its first word alone (`["keys"]`); nil for no such command.
    static func of(_ words: [String]) -> String? {
        let matching = entries.filter { $0.words.starts(with: words) }
        guard !words.isEmpty, !matching.isEmpty else { return nil }
        let adminNote = matching.contains { $0.words != ["serve"] && $0.words != ["init"] } ? "\n" + adminOptions : ""
        return "Usage:\n" + matching.map(\.text).joined(separator: "\n") + adminNote + "\n\n" + exitStatus
    }

    /// Every command's usage, as `fingerauthd --help` prints it.
    static var text: String {
        """
        fingerauthd: the FingerAuth reference authenticator

        Usage:
        \(entries.map(\.text).joined(separator: "\n"))
        \(adminOptions)
          fingerauthd --help, fingerauthd COMMAND --help

        Each option may be given once; a repeated one is a usage error.
        \(exitStatus)
        """
    }

    static let exitStatus = "Exit status: 0 success, 1 failure, 2 usage or configuration error."

    static let adminOptions = "  Admin commands take --db PATH|URL, or --config FILE to read db from it."

    /// One command's words and its lines of the usage.
    struct Entry {
        let words: [String]
        let text: String
    }

    static let entries: [Entry] = [
        Entry(
            words: ["init"],
            text: """
                  fingerauthd init [--name NAME [--self-signed | --ca-cert FILE --ca-key FILE] [--days N]]
                                   [--config FILE] [--listen ADDR:PORT] [--audience AUD] [--db PATH]
                                   [--tls-cert FILE] [--tls-key FILE] [--user USER] [--force]
                      As root, once: the database's directory owned by USER (default fingerauthd), the
                      configuration file (default /etc/fingerauthd.conf; what is missing or still the
                      shipped example is filled in, a flag replaces a value; the audience from NAME:
                      https://NAME:PORT/v1/login), and with --self-signed or --ca-cert/--ca-key a new
                      ECDSA P-256 key (USER's, 0600) and certificate for NAME (a DNS name or an address),
                      valid N days (default 365), at tls-cert and tls-key (default
                      /etc/fingerauthd/cert.pem and key.pem; a pair there already is kept when it is for
                      NAME, signed as asked and still valid, --force replaces it). Prints the next
                      commands: start the service with systemd or without, a host's token, the host's url
                      and cafile.
                """),
        Entry(
            words: ["serve"],
            text: """
                  fingerauthd serve [--config FILE] [--listen ADDR:PORT] [--db PATH] --audience AUD
                                    [--tls-cert FILE --tls-key FILE] [OPTION VALUE]...
                      Serve the HTTP API. ADDR is a numeric IPv4 address or [IPv6]; PORT 0 picks a free
                      port. Without TLS only a loopback address is allowed. Prints one line
                      "listening on URL" once ready; SIGTERM or SIGINT stops it after the requests in
                      flight are answered; SIGHUP reloads the TLS certificate and key (the old ones
                      stay when the new ones are unusable). Every option may also stand in the
                      configuration file (default /etc/fingerauthd.conf) as "name = value"; a flag
                      wins over the file.
                      --listen            address and port (default 127.0.0.1:8443)
                      --db                SQLite file (default /var/lib/fingerauthd/authd.db), or a
                                          postgresql://USER@HOST:PORT/DB URL shared by several instances
                      --max-ttl           longest accepted token lifetime, exp - iat (default 300, at most 300)
                      --skew              tolerated clock difference, seconds (default 30, at most 300)
                      --approval          automatic | manual: new keys pending until approved (default automatic)
                      --access-token-ttl  lifetime of /oauth2/token access tokens, seconds (default 300)
                      --user-failures     refused logins of a verified user from one address per window
                                          before 429; 0 off (default 10)
                      --address-failures  refused requests per client address per window; 0 off (default 50)
                      --failure-window    the window, seconds (default 300)
                      --trusted-proxies   load balancers (CIDRs, comma-separated) whose X-Forwarded-For
                                          names the client (right-most untrusted address)
                      --metrics-token-file  file with a bearer token that GET /metrics then requires
                      --tpm-ek-ca         PEM bundle of the TPM vendors' EK CAs: enables TPM key attestation
                                          (POST /v1/keys/challenge); keys it proves are kind attested-tpm
                      --require-hardware-keys  yes | no: refuse registration and login of keys that are
                                          not attested TPM keys (default no; needs --tpm-ek-ca)
                      --max-keys-per-user-host  active or pending keys one user may hold on one host; one
                                          more is refused 409 too_many_keys; 0 no limit (default 10)
                      --host-registrations  successful registrations (new keys and the same key again) per
                                          host per window before 429; 0 off (default 30)
                      --approval-mute     seconds a user's remote approval requests are refused after a
                                          "Not me" (default 1200)
                      --approval-wait     longest a long poll (a host waiting, a workstation watching)
                                          is held, seconds; keep it below any proxy's idle limit (default 25)
                      --approval-host-requests  remote approval requests per host per minute; 0 off (default 30)
                      --approval-address-requests  remote approval requests per client address per
                                          minute; 0 off (default 120)
                      --admin-listen      PORT (on 127.0.0.1) or ADDRESS:PORT of the admin console, a listener
                                          of its own (TLS as --listen); off unless set. Reach it through an
                                          SSH tunnel or a reverse proxy with its own authentication
                      --threads           worker threads (default 4)
                      --connection-timeout  idle seconds before a connection is closed (default 10)
                      --head-timeout      seconds for a whole request head, from the connection's
                                          accept or the previous answer (default 10)
                      --request-timeout   seconds to receive a whole body (default 30)
                      --max-connections   simultaneous connections (default 1024)
                      --max-connections-per-address  per client address (default 64)
                      --connection-rate   new connections a second per client address, checked before TLS; 0: no limit (default 20)
                      --connection-burst  new connections one address may open at once (default 128)
                      --session-tickets   seconds a TLS 1.3 session ticket resumes a session without a
                                          certificate signature; 0: no tickets (default 3600)
                      --shutdown-grace    seconds SIGTERM waits for requests in flight (default 10)
                      --prune-interval    seconds between removals of expired jti and old audit rows (default 60)
                      --audit-retention-days  audit rows of verified requests kept, days; 0 keeps them all (default 365)
                      --unverified-audit-retention-days  rows of unverified requests, days; 0 keeps them (default 7)
                      --db-statement-timeout-ms  PostgreSQL statement timeout (default 5000)
                      --grant-key         P-256 key (fingerauthd grants new-key) that signs offline grants;
                                          without it none is issued, whatever the offline rules say
                      --grant-key-previous  the key before a rotation: still published to hosts, never
                                          signs; remove it once the longest offline grant has run out
                """),
        Entry(
            words: ["token", "create"],
            text: """
                  fingerauthd token create --host HOST     print a new enrollment token for HOST
                """),
        Entry(
            words: ["token", "list"],
            text: """
                  fingerauthd token list [--json]          tokens by id (never the token itself)
                """),
        Entry(
            words: ["token", "revoke"],
            text: """
                  fingerauthd token revoke --id ID | --host HOST
                                                           --host also revokes HOST's keys, host keys and
                                                           access tokens
                """),
        Entry(
            words: ["keys", "list"],
            text: """
                  fingerauthd keys list [--status S] [--user U] [--json]
                """),
        Entry(
            words: ["keys", "approve"],
            text: """
                  fingerauthd keys approve --kid KID       make a pending key active
                """),
        Entry(
            words: ["keys", "revoke"],
            text: """
                  fingerauthd keys revoke --kid KID | [--user U] [--host H]
                                                           refuse the key's (or every matching key's) tokens from now on
                """),
        Entry(
            words: ["audit"],
            text: """
                  fingerauthd audit [--user U] [--since T] [--limit N] [--json]
                      T: seconds since 1970, YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ, or an age (30m, 12h, 7d).
                """),
        Entry(
            words: ["policy", "list"],
            text: """
                  fingerauthd policy list [--json]         the rules, in the order they are tried
                """),
        Entry(
            words: ["policy", "add"],
            text: """
                  fingerauthd policy add --stage login|registration|offline --users P --hosts P [--services P]
                                    [--key software|hardware|*] [--position N]
                                    --action allow|deny|require-hardware-key|require-provisioned-ek
                                    [--offline-hours H --offline-uses N]
                      P: comma-separated names, list:NAME (users), label:NAME (hosts), or *. The first
                      matching rule of the stage decides; when none matches, the answer is allow, but
                      for the offline stage: no offline grant. An offline rule that grants needs
                      --offline-hours (1 to 720) and --offline-uses (1 to 1000).
                """),
        Entry(
            words: ["policy", "remove"],
            text: """
                  fingerauthd policy remove --id ID        delete a rule
                """),
        Entry(
            words: ["policy", "move"],
            text: """
                  fingerauthd policy move --id ID --position N
                                                           move a rule to another place in the order
                """),
        Entry(
            words: ["policy", "test"],
            text: """
                  fingerauthd policy test --user U --host H [--service S] [--hardware | --provisioned-ek]
                                    [--stage registration|offline] [--json]
                                                           the decision and its rule; exit 0 allow, 3 deny
                """),
        Entry(
            words: ["hosts", "list"],
            text: """
                  fingerauthd hosts list [--json]          hosts: labels, tokens, keys, pinned EK
                """),
        Entry(
            words: ["hosts", "label"],
            text: """
                  fingerauthd hosts label --host H --labels L1,L2
                """),
        Entry(
            words: ["hosts", "unlabel"],
            text: """
                  fingerauthd hosts unlabel --host H (--labels L | --all)
                """),
        Entry(
            words: ["hosts", "add-ek"],
            text: """
                  fingerauthd hosts add-ek HOST HASH [--replace]
                                                           pin HOST's TPM endorsement key (HASH: `fingerauth key ek`
                                                           on the host); over a pin on first use, or another admin
                                                           pin with --replace, it revokes keys attested by another EK
                """),
        Entry(
            words: ["hosts", "reset-ek"],
            text: """
                  fingerauthd hosts reset-ek HOST          drop HOST's pin (and its keys attested by the pinned EK):
                                                           the next attestation pins anew
                """),
        Entry(
            words: ["hosts", "keys"],
            text: """
                  fingerauthd hosts keys [--host H] [--json]
                                                           host keys (what signs a host's approval requests),
                                                           newest first: kid, host, status, created
                """),
        Entry(
            words: ["hosts", "revoke-key"],
            text: """
                  fingerauthd hosts revoke-key --kid KID | --host H
                                                           revoke a host key, or H's active one: its requests
                                                           are refused until it registers a new one
                """),
        Entry(
            words: ["users", "list"],
            text: """
                  fingerauthd users list [--json]          the user lists and their members
                """),
        Entry(
            words: ["users", "add"],
            text: """
                  fingerauthd users add --list L --users U1,U2
                """),
        Entry(
            words: ["users", "remove"],
            text: """
                  fingerauthd users remove --list L (--users U | --all)
                """),
        Entry(
            words: ["admin", "create"],
            text: """
                  fingerauthd admin create NAME [--console-url URL]
                                                           a console account; prints its one-time setup link (24 h)
                                                           on admin-listen, and while no admin-listen is set, the
                                                           line to add and what to restart
                """),
        Entry(
            words: ["admin", "reset"],
            text: """
                  fingerauthd admin reset NAME [--console-url URL]
                                                           clears the account's password, ends its console sessions;
                                                           prints a new one-time setup link (24 h)
                """),
        Entry(
            words: ["admin", "remove"],
            text: """
                  fingerauthd admin remove NAME            deletes the account, ends its console sessions (the
                                                           last one too: admin create makes a new one)
                """),
        Entry(
            words: ["admin", "list"],
            text: """
                  fingerauthd admin list                   console accounts, ready or setup pending
                """),
        Entry(
            words: ["doctor"],
            text: """
                  fingerauthd doctor [--json]              stored names that break the user-name rule (keys, audit,
                                                           policy rules, user lists, console accounts); changes
                                                           nothing; exit 1 when it lists any
                """),
        Entry(
            words: ["grants", "new-key"],
            text: """
                  fingerauthd grants new-key --out FILE [--force]
                                                           a new P-256 offline-grant key (0600) for grant-key
                """),
        Entry(
            words: ["grants", "list"],
            text: """
                  fingerauthd grants list [--host H] [--json]
                                                           live offline grants, newest first
                """),
        Entry(
            words: ["grants", "withdraw"],
            text: """
                  fingerauthd grants withdraw --host H [--user U]
                                                           end the host's grants; it drops them at its next contact
                """),
    ]
}

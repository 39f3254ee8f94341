import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem
import FingerAuthTransport

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd init`: what `serve` needs on a machine, made once, as root: the database's
/// directory owned by the service's user (what systemd's `StateDirectory=` makes for the
/// unit), the configuration file, and on request a TLS certificate (a new ECDSA P-256 key,
/// self-signed or signed by the admin's CA) for the name the hosts will use. Then it prints
/// the next commands. It fills in what is missing or still the shipped example; a flag
/// replaces a value; an existing certificate and key are kept when they are what init
/// would make now (a reinstall), else replaced only with `--force`.
enum InitCommand {
    static let name = "init"
    /// The shipped /etc/fingerauthd.conf's example values: init replaces them.
    static let shippedExamples: [String: String] = ["audience": "https://auth.example.com/v1/login"]
    static let defaultUser = "fingerauthd"
    static let defaultCertificate = "/etc/fingerauthd/cert.pem"
    static let defaultKey = "/etc/fingerauthd/key.pem"

    static func run(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let flags = try Options(
            arguments,
            valued: [
                "config", "name", "listen", "db", "audience", "tls-cert", "tls-key",
                "user", "ca-cert", "ca-key", "days",
            ],
            switches: ["self-signed", "force"], command: name)
        let request = try Request(flags, words: arguments)
        guard geteuid() == 0 else {
            printError(
                "fingerauthd: init must run as root: it gives the state directory and the TLS key to the service's user (try: sudo fingerauthd init …)"
            )
            return 1
        }
        guard case let .found(account) = SystemUserDatabase().account(named: request.user) else {
            printError(
                "fingerauthd: init: no user '\(request.user)' to run the authenticator as. The package makes it "
                    + "(systemd-sysusers fingerauthd.conf); without the package: useradd --system --home-dir /var/lib/fingerauthd "
                    + "--shell /usr/sbin/nologin \(request.user)")
            return 1
        }
        let owner = (uid: uid_t(account.uid), gid: gid_t(account.gid))
        let configPath = request.config
        let configText: String?
        do {
            configText = try InitFiles.readConfig(configPath)
        } catch {
            printError("fingerauthd: init: \(error.message)")
            return 1
        }
        let existing =
            try configText.map { text throws(UsageError) in try ConfigFile.parse(text, path: configPath) } ?? [:]
        let settings = request.settings(over: existing)
        var report: [String] = []
        do {
            if case let .sqlite(path) = StoreLocation(settings["db"] ?? ServeSettings.defaultDatabase) {
                report += try InitFiles.prepareStateDirectory(of: path, owner: owner, user: request.user)
            } else {
                report.append(
                    "database: PostgreSQL (\(StoreLocation(settings["db"] ?? "").redacted)): no state directory to make"
                )
            }
            if let subject = request.subject, request.wantsCertificate {
                report += try makeCertificate(request, subject: subject, settings: settings, owner: owner)
            } else if let certificate = settings["tls-cert"], !SafeFile.exists(certificate) {
                report.append(
                    "no certificate at \(certificate) yet: run init again with --name NAME and --self-signed "
                        + "(or --ca-cert F --ca-key F), or put yours there (its key owned by \(request.user), mode 0600)"
                )
            }
            report.append(
                try InitFiles.writeConfig(configPath, text: configText, settings: settings, existing: existing))
        } catch {
            for line in report { print(line) } // what was done before the failure
            printError("fingerauthd: init: \(error.message)")
            return 1
        }
        for line in report { print(line) }
        printNextSteps(request, settings: settings, configPath: configPath)
        return 0
    }

    /// The key and certificate, written where `tls-cert` and `tls-key` say: the certificate
    /// root 0644, the key the service user's 0600.
    private static func makeCertificate(
        _ request: Request, subject: ServerCertificate.Subject, settings: [String: String],
        owner: (uid: uid_t, gid: gid_t)
    ) throws(InitError) -> [String] {
        let certificatePath = settings["tls-cert"] ?? defaultCertificate
        let keyPath = settings["tls-key"] ?? defaultKey
        var issuer: CertificateIssuer?
        if let caCertificate = request.caCertificate, let caKey = request.caKey {
            do {
                let certificatePEM = try SafeFile.read(
                    caCertificate, rule: FileRule(owner: nil, forbiddenBits: 0o022, maxBytes: 256 * 1024))
                let keyPEM = try SafeFile.read(
                    caKey, rule: FileRule(owner: 0, forbiddenBits: 0o077, maxBytes: 64 * 1024))
                issuer = try CertificateIssuer(certificatePEM: certificatePEM, keyPEM: keyPEM)
            } catch {
                throw InitError("CA \(caCertificate), \(caKey): \(error)")
            }
        }
        if !request.force && (SafeFile.exists(certificatePath) || SafeFile.exists(keyPath)) {
            return try InitFiles.reuseCertificate(
                certificatePath, keyPath: keyPath, subject: subject, issuer: issuer, request: request, owner: owner)
        }
        let made: ServerCertificate
        do {
            made = try ServerCertificate.make(for: subject, days: request.days, issuer: issuer)
        } catch {
            throw InitError("certificate: \(error)")
        }
        try InitFiles.write(certificatePath, made.certificatePEM, mode: 0o644, owner: (0, 0))
        try InitFiles.write(keyPath, made.keyPEM, mode: 0o600, owner: owner)
        let signer = request.caCertificate.map { "signed by the CA \($0)" } ?? "self-signed"
        return [
            "certificate \(certificatePath): ECDSA P-256, \(signer), for \(subjectText(subject)), valid \(request.days) days",
            "key \(keyPath): \(request.user), mode 0600",
        ]
    }

    static func subjectText(_ subject: ServerCertificate.Subject) -> String {
        switch subject {
        case let .address(text): return "the address \(text)"
        case let .dns(text): return "the name \(text)"
        }
    }

    private static func printNextSteps(_ request: Request, settings: [String: String], configPath: String) {
        let config = configPath == ConfigFile.defaultPath ? "" : " --config \(configPath)"
        print("next:")
        print("  start it, with systemd:    systemctl enable --now fingerauthd")
        print("            without systemd: runuser -u \(request.user) -- fingerauthd serve --config \(configPath)")
        print("  a host's enrollment token: fingerauthd token create --host HOST\(config)")
        print("                             (on that host: /etc/security/fingerauth.token, root 0600)")
        guard let url = request.loginURL(listen: settings["listen"]) ?? settings["audience"] else { return }
        let trusted = request.caCertificate ?? settings["tls-cert"] ?? defaultCertificate
        print("  on each host, in /etc/security/fingerauth.conf:")
        print("      url = \(url)")
        if let audience = settings["audience"], audience != url { print("      audience = \(audience)") }
        print("      cafile = \(trusted)   (a copy of that file on the host)")
    }
}

/// A failure of init the admin can act on: exit status 1 and the message.
struct InitError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

extension InitCommand {
    /// The flags of one `init`, checked.
    struct Request {
        let config: String
        let subject: ServerCertificate.Subject?
        let user: String
        let caCertificate: String?
        let caKey: String?
        let selfSigned: Bool
        let force: Bool
        let days: Int
        let flags: Options
        /// The arguments as given, for the command a message tells to run again.
        let words: [String]

        var wantsCertificate: Bool { selfSigned || caCertificate != nil }

        init(_ flags: Options, words: ArraySlice<String>) throws(UsageError) {
            self.flags = flags
            self.words = Array(words)
            config = flags.optional("config") ?? ConfigFile.defaultPath
            user = flags.optional("user") ?? InitCommand.defaultUser
            if let name = flags.optional("name") {
                guard let subject = ServerCertificate.Subject(name) else {
                    throw UsageError(
                        message:
                            "init: --name must be a DNS name or a numeric IP address, as the hosts will reach the authenticator"
                    )
                }
                self.subject = subject
            } else {
                subject = nil
            }
            caCertificate = flags.optional("ca-cert")
            caKey = flags.optional("ca-key")
            selfSigned = flags.flag("self-signed")
            force = flags.flag("force")
            days = Int(try flags.seconds("days", default: 365, range: 1...3650, command: "init"))
            guard (caCertificate == nil) == (caKey == nil) else {
                throw UsageError(message: "init: --ca-cert and --ca-key go together")
            }
            guard !(selfSigned && caCertificate != nil) else {
                throw UsageError(message: "init: either --self-signed or --ca-cert/--ca-key, not both")
            }
            guard !wantsCertificate || subject != nil else {
                throw UsageError(message: "init: a certificate needs --name (the DNS name or address the hosts use)")
            }
            if let listen = flags.optional("listen"), ListenAddress(listen) == nil {
                throw UsageError(
                    message: "init: listen takes a numeric address and port, such as 127.0.0.1:8443 or [::1]:8443")
            }
        }

        /// This init again with `extra` added, quoted for a shell: the command a message names.
        func again(adding extra: String) -> String {
            (["fingerauthd", InitCommand.name] + words.map(Self.shellWord) + [extra]).joined(separator: " ")
        }

        /// `word` as a shell reads it back: as it is when plain, else in single quotes.
        static func shellWord(_ word: String) -> String {
            let plain =
                !word.isEmpty
                && word.utf8.allSatisfy { byte in
                    (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                        || "@%+=:,./_-".utf8.contains(byte)
                }
            if plain { return word }
            return "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
        }

        /// `https://NAME:PORT/v1/login`, the port from `listen`; nil without `--name`.
        func loginURL(listen: String?) -> String? {
            guard let subject else { return nil }
            let port = (listen.flatMap(ListenAddress.init)?.port).map(String.init) ?? "8443"
            switch subject {
            case let .address(text) where text.contains(":"): return "https://[\(text)]:\(port)/v1/login"
            case let .address(text), let .dns(text): return "https://\(text):\(port)/v1/login"
            }
        }

        /// The settings to write: a flag wins; else the file's value unless it is the shipped
        /// example; else what the name implies (`audience`) or the default.
        func settings(over existing: [String: String]) -> [String: String] {
            var out: [String: String] = [:]
            func pick(_ key: String, derived: String?) {
                if let flag = flags.optional(key) {
                    out[key] = flag
                    return
                }
                if let value = existing[key], InitCommand.shippedExamples[key] != value {
                    out[key] = value
                    return
                }
                if let derived { out[key] = derived }
            }
            pick("listen", derived: existing["listen"] ?? "0.0.0.0:8443")
            pick("audience", derived: loginURL(listen: out["listen"]) ?? existing["audience"])
            pick("tls-cert", derived: InitCommand.defaultCertificate)
            pick("tls-key", derived: InitCommand.defaultKey)
            pick("db", derived: ServeSettings.defaultDatabase)
            return out
        }
    }
}

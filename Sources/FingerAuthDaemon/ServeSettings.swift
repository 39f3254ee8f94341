import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem
import FingerAuthTransport

#if canImport(Glibc)
import Glibc
#endif

/// Everything `serve` runs with, read from flags over the configuration file, each value
/// checked with a message that names the key.
struct ServeSettings {
    static let defaultListen = "127.0.0.1:8443"
    static let defaultDatabase = "/var/lib/fingerauthd/authd.db"

    var listen: ListenAddress
    /// Where the admin console listens (`admin-listen`); nil: no console.
    var adminListen: ListenAddress?
    var database: String
    var certificate: String?
    var key: String?
    var policy: VerifierPolicy
    var service: ServiceSettings
    var limits: ServerLimits
    /// Seconds SIGTERM waits for requests in flight.
    var shutdownGrace: Double
    /// Seconds between two pruning passes (expired jti, access tokens, old audit rows).
    var pruneInterval: Int64
    /// What each pruning pass removes (audit rows of verified and of unverified requests
    /// past their retention).
    var prunePolicy: PrunePolicy
    /// PostgreSQL: milliseconds after which a statement is cancelled (statement_timeout).
    var statementTimeout: Int

    init(_ options: Options, command: String) throws(UsageError) {
        let listenText = options.optional("listen") ?? Self.defaultListen
        guard let listen = ListenAddress(listenText) else {
            throw UsageError(
                message: "\(command): listen takes a numeric address and port, such as 127.0.0.1:8443 or [::1]:8443")
        }
        self.listen = listen
        if let text = options.optional("admin-listen") {
            // A bare port is on loopback: the console is for an SSH tunnel or a proxy in front.
            guard let admin = ListenAddress(text.allSatisfy(\.isNumber) ? "127.0.0.1:" + text : text) else {
                throw UsageError(
                    message:
                        "\(command): admin-listen takes a port (on 127.0.0.1) or a numeric address and port, such as 127.0.0.1:8444"
                )
            }
            guard admin.host != listen.host || admin.port != listen.port || admin.port == 0 else {
                throw UsageError(
                    message:
                        "\(command): admin-listen must differ from listen (the console never shares the login port)")
            }
            adminListen = admin
        }
        database = options.optional("db") ?? Self.defaultDatabase
        let audience = try options.required("audience", command: command)
        guard audience.utf8.count <= 256, audience.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw UsageError(message: "\(command): audience must be 1 to 256 printable characters without spaces")
        }
        let maxTTL = try options.seconds("max-ttl", default: 300, range: 1...300, command: command)
        let skew = try options.seconds("skew", default: 30, range: 0...ReplayWindow.maxSkew, command: command)
        policy = VerifierPolicy(audience: audience, maxTTL: maxTTL, skew: skew)
        certificate = options.optional("tls-cert")
        key = options.optional("tls-key")
        guard (certificate == nil) == (key == nil) else {
            throw UsageError(message: "\(command): give both tls-cert and tls-key, or neither")
        }
        guard certificate != nil || listen.isLoopback else {
            throw UsageError(
                message:
                    "\(command): plain HTTP is only allowed on a loopback address; give --tls-cert and --tls-key, or listen on 127.0.0.1"
            )
        }
        if let adminListen, certificate == nil, !adminListen.isLoopback {
            throw UsageError(
                message:
                    "\(command): the console over plain HTTP is only allowed on a loopback address (admin-listen); give --tls-cert and --tls-key"
            )
        }
        let approvalText = options.optional("approval") ?? "automatic"
        guard let approval = Approval(rawValue: approvalText) else {
            throw UsageError(message: "\(command): approval must be automatic or manual")
        }
        let window = try options.seconds("failure-window", default: 300, range: 1...86_400, command: command)
        let userFailures = try options.seconds("user-failures", default: 10, range: 0...1_000_000, command: command)
        let addressFailures = try options.seconds(
            "address-failures", default: 50, range: 0...1_000_000, command: command)
        var proxies: [Network] = []
        if let text = options.optional("trusted-proxies") {
            guard let networks = ClientAddress.networks(text) else {
                throw UsageError(
                    message:
                        "\(command): trusted-proxies takes addresses or networks (CIDR) separated by commas, such as 10.0.0.0/8, 192.168.1.5"
                )
            }
            proxies = networks
        }
        service = ServiceSettings(
            approval: approval,
            accessTokenTTL: try options.seconds("access-token-ttl", default: 300, range: 10...86_400, command: command),
            userLimit: RateLimit(failures: Int(userFailures), window: window),
            addressLimit: RateLimit(failures: Int(addressFailures), window: window),
            metricsToken: try Self.metricsToken(options.optional("metrics-token-file"), command: command))
        service.grantSigner = try GrantKeys.load(
            current: options.optional("grant-key"), previous: options.optional("grant-key-previous"), command: command)
        service.attestation = try Self.endorsementTrust(options.optional("tpm-ek-ca"), command: command)
            .map { TPMKeyAttestation(trust: $0) }
        switch options.optional("require-hardware-keys") ?? "no" {
        case "yes": service.requireHardwareKeys = true
        case "no": service.requireHardwareKeys = false
        default: throw UsageError(message: "\(command): require-hardware-keys must be yes or no")
        }
        service.maxKeysPerUserHost = Int(
            try options.seconds(
                "max-keys-per-user-host", default: 10, range: 0...10_000,
                command: command))
        let hostRegistrations = try options.seconds(
            "host-registrations", default: 30, range: 0...1_000_000, command: command)
        service.hostRegistrations = RateLimit(failures: Int(hostRegistrations), window: window)
        service.approvals.muteSeconds = try options.seconds(
            "approval-mute", default: 1200, range: 0...86_400, command: command)
        service.approvals.maxWait = try options.seconds("approval-wait", default: 25, range: 1...300, command: command)
        let hostRequests = try options.seconds(
            "approval-host-requests", default: 30, range: 0...1_000_000, command: command)
        service.approvals.hostRequests = RateLimit(failures: Int(hostRequests), window: 60)
        let addressRequests = try options.seconds(
            "approval-address-requests", default: 120, range: 0...1_000_000, command: command)
        service.approvals.addressRequests = RateLimit(failures: Int(addressRequests), window: 60)
        if service.requireHardwareKeys && service.attestation == nil {
            throw UsageError(
                message: "\(command): require-hardware-keys = yes needs tpm-ek-ca (no key could be registered)")
        }
        limits = ServerLimits()
        limits.clientAddress = ClientAddress(trustedProxies: proxies)
        limits.threads = UInt32(try options.seconds("threads", default: 4, range: 1...64, command: command))
        limits.connectionTimeout = UInt32(
            try options.seconds("connection-timeout", default: 10, range: 1...300, command: command))
        limits.headTimeout = Double(try options.seconds("head-timeout", default: 10, range: 1...300, command: command))
        limits.requestTimeout = Double(
            try options.seconds("request-timeout", default: 30, range: 1...300, command: command))
        limits.maxConnections = UInt32(
            try options.seconds("max-connections", default: 1024, range: 1...100_000, command: command))
        limits.maxConnectionsPerAddress = UInt32(
            try options.seconds(
                "max-connections-per-address", default: 64,
                range: 1...10_000, command: command))
        let connectionRate = try options.seconds("connection-rate", default: 20, range: 0...100_000, command: command)
        let connectionBurst = try options.seconds(
            "connection-burst", default: 128, range: 1...100_000, command: command)
        limits.connectionRate = ConnectionRateLimit.Limit(rate: Double(connectionRate), burst: Double(connectionBurst))
        limits.sessionTicketLifetime = Int32(
            try options.seconds(
                "session-tickets", default: 3600, range: 0...86_400,
                command: command))
        shutdownGrace = Double(try options.seconds("shutdown-grace", default: 10, range: 0...300, command: command))
        pruneInterval = try options.seconds("prune-interval", default: 60, range: 1...86_400, command: command)
        let retentionDays = try options.seconds(
            "audit-retention-days", default: 365, range: 0...36_500, command: command)
        let unverifiedDays = try options.seconds(
            "unverified-audit-retention-days", default: 7, range: 0...36_500,
            command: command)
        prunePolicy = PrunePolicy(
            auditRetention: retentionDays == 0 ? nil : retentionDays * 86_400,
            unverifiedAuditRetention: unverifiedDays == 0 ? nil : unverifiedDays * 86_400)
        statementTimeout = Int(
            try options.seconds(
                "db-statement-timeout-ms", default: 5000, range: 100...600_000,
                command: command))
    }

    /// The EK CA bundle of `tpm-ek-ca` (a PEM file, not writable by group or others, at
    /// most 1 MiB, at least one certificate); nil without a path.
    static func endorsementTrust(_ path: String?, command: String) throws(UsageError) -> CertificateTrust? {
        guard let path else { return nil }
        do {
            let bytes = try SafeFile.read(path, rule: FileRule(owner: nil, forbiddenBits: 0o022, maxBytes: 1 << 20))
            return try CertificateTrust(pem: bytes)
        } catch {
            throw UsageError(message: "\(command): tpm-ek-ca: \(error)")
        }
    }

    /// The bearer token `/metrics` asks for, read from `path` (owned by this user, not
    /// readable by group or others, 16 to 256 printable characters); nil without a path.
    static func metricsToken(_ path: String?, command: String) throws(UsageError) -> String? {
        guard let path else { return nil }
        var bytes: [UInt8]
        do {
            bytes = try SafeFile.read(
                path, rule: FileRule(owner: UInt32(geteuid()), forbiddenBits: 0o077, maxBytes: 4096))
        } catch {
            throw UsageError(message: "\(command): metrics-token-file: \(error)")
        }
        defer { for i in bytes.indices { bytes[i] = 0 } }
        let token = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        guard token.utf8.count >= 16, token.utf8.count <= 256, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw UsageError(message: "\(command): metrics-token-file must hold 16 to 256 printable characters")
        }
        return token
    }
}

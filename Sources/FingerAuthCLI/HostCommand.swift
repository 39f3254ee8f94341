import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM

/// `fingerauth host register|status`: this host's own key, which signs its requests for a
/// remote approval (never a login). It lives in `<state_dir>/host/host.key` (RSA-2048,
/// PKCS#8 PEM, root 0600, in a root 0700 folder) beside `<state_dir>/host/registration`,
/// the same shapes as a user's `device.key` and `registration`.
enum HostCommand {
    static let usage = """
        usage: fingerauth host register [--store tpm|file|auto] [--config F] [--state-dir D]
               fingerauth host status [--json] [--config F] [--state-dir D]
          register  makes this host's key when there is none (RSA-2048, <state_dir>/host/host.key, root
                    0600: in the TPM with --store tpm, or key_store = tpm, or auto where a TPM with an
                    EK certificate answers; else a file) and registers it: POST /v1/hosts/keys with this
                    host's enrollment token (token_file), a proof signed by the key and, for a TPM key, its
                    attestation, for the host the user keys name (host_id, else the host name); records
                    kid, authenticator, time and status in <state_dir>/host/registration. A new key
                    revokes the host's previous one there.
          status    the host key's kid and its registration, as the files say (asks nothing)
          Both need root. Exit status: 0 done, 1 failed (the message says what to do), 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first, !sub.hasPrefix("-") else {
            throw UsageError(message: "host needs register or status")
        }
        let rest = Array(words.dropFirst())
        switch sub {
        case "register":
            let args = try CommandArguments(rest, valued: ["config", "state-dir", "store"])
            try Context.requireRoot("host register")
            let paths = HostPaths(try Context.loadOptions(args, requireURL: true))
            let key = try paths.loadOrCreateKey(store: { () throws(UsageError) in
                try KeyStores.choose(args, options: paths.options)
            })
            let status = try register(key, paths: paths)
            say(
                "registered host key \(key.kid) for \(Authenticator(options: paths.options).hostID) at "
                    + "\(Authenticator(options: paths.options).hostKeysURL): \(status)")
            return 0
        case "status":
            let args = try CommandArguments(rest, valued: ["config", "state-dir"], switches: ["json"])
            try Context.requireRoot("host status")
            return try status(HostPaths(try Context.loadOptions(args, requireURL: false)), json: args.has("json"))
        default:
            throw UsageError(message: "unknown host command '\(sub)'")
        }
    }

    /// Registers `key` and records it in `<state_dir>/host/registration`; returns the status.
    static func register(_ key: DeviceKey, paths: HostPaths) throws(CommandError) -> String {
        let authenticator = Authenticator(options: paths.options)
        let token = try authenticator.hostToken()
        let host = authenticator.hostID
        let now = SystemClock().now()
        let proof = try authenticator.proof(signedBy: key, type: TokenType.hostKeyProof, subject: host, now: now)
        var members: [(String, JSONValue)] = [
            ("host", .string(host)), ("jwk", key.jwk.json), ("proof", .string(proof)),
        ]
        if let attestation = try KeyAttestation(authenticator: authenticator, token: token, user: nil).member(for: key)
        {
            members.append(("attestation", attestation))
        }
        let body = JSONEncoding.encodeBytes(.object(members))
        let url = authenticator.hostKeysURL
        let response: HTTPResponse
        switch authenticator.send("POST", url, body: body, token: token) {
        case let .failure(failure): throw CommandError("\(failure.message) (url \(url))", unreachable: true)
        case let .success(answer): response = answer
        }
        let error = (try? JSONParser().parse(response.body))?["error"]?.stringValue
        switch response.status {
        case 200, 201:
            let answered = (try? JSONParser().parse(response.body))?["status"]?.stringValue ?? "active"
            guard let status = Registration.statusWord(answered) else {
                throw CommandError(
                    "the authenticator registered host key \(key.kid) but answered an unreadable status "
                        + "(\(Authenticator.printable(answered))); nothing recorded in \(paths.registration)")
            }
            do {
                try Registration(kid: key.kid, authenticator: url, time: now, status: status).save(paths.registration)
            } catch {
                throw CommandError("registered, but cannot record it: \(error)")
            }
            return status
        case 401:
            throw CommandError(
                "the authenticator refused this host's enrollment token (\(paths.options.tokenFile)): "
                    + Authenticator.reason(response))
        case 400 where error?.hasPrefix("proof_") == true:
            throw CommandError(
                "the authenticator refused the proof signed by the host key: \(Authenticator.reason(response)) "
                    + "(check this host's clock, and that url's audience is the authenticator's)")
        case 403 where error == "host_mismatch":
            throw CommandError(
                "the enrollment token (\(paths.options.tokenFile)) is for another host than \(Authenticator.printable(host)); "
                    + "set host_id, or make a token for this host: fingerauthd token create --host \(Authenticator.printable(host))"
            )
        case 403 where error == "ek_mismatch":
            throw CommandError(KeyAttestation.ekMismatch(host: host))
        case 409 where error == "key_revoked":
            throw CommandError(
                "the authenticator has revoked this host key; make a new one: remove \(paths.key), then run "
                    + "fingerauth host register again")
        case 409:
            throw CommandError("the authenticator has this key registered to another host, or as a user's key")
        case 429:
            throw CommandError(
                "the authenticator takes no more registrations from \(Authenticator.printable(host)) for now "
                    + "(host-registrations, or too many refused requests from here); try again in a few minutes")
        default:
            throw CommandError("the authenticator answered \(response.status): \(Authenticator.reason(response))")
        }
    }

    /// `host status`: the key and its registration as the files say; 1 when there is no key.
    static func status(_ paths: HostPaths, json: Bool) throws(CommandError) -> Int32 {
        guard SafeFile.exists(paths.key) else {
            throw CommandError("this host has no host key (make and register one: fingerauth host register)")
        }
        let key = try paths.loadKey()
        let registration: Registration?
        do { registration = try Registration.load(paths.registration) } catch {
            throw CommandError("host registration: \(error)")
        }
        let current = registration.map { $0.kid == key.kid } ?? false
        let status = current ? (registration?.status ?? "active") : "unregistered"
        if json {
            var members: [(String, JSONValue)] = [
                ("host", .string(Authenticator(options: paths.options).hostID)), ("kid", .string(key.kid)),
                ("status", .string(status)),
            ]
            if let registration, current {
                members += [
                    ("authenticator", .string(registration.authenticator)), ("registered", .integer(registration.time)),
                ]
            }
            say(JSONEncoding.encode(.object(members)))
            return 0
        }
        say("host:   \(Authenticator.printable(Authenticator(options: paths.options).hostID))")
        say("kid:    \(key.kid)")
        say("status: \(status)")
        if let registration, current {
            say("authenticator: \(registration.authenticator)")
            say("registered: \(UTCTime.seconds(registration.time))")
        } else {
            say("register it with: fingerauth host register")
        }
        return 0
    }
}

/// Where this host's key and its registration are kept.
struct HostPaths {
    let options: Options

    init(_ options: Options) { self.options = options }

    /// `<state_dir>/host` (root 0700).
    var directory: String { options.stateDirectory + "/host" }
    var key: String { directory + "/host.key" }
    var registration: String { directory + "/registration" }

    /// The host key, made (RSA-2048, root 0600, in `store`) when there is none; `store` is
    /// asked only then.
    func loadOrCreateKey(store: () throws(UsageError) -> KeyStores.Store) throws -> DeviceKey {
        do { try SafeFile.makeDirectory(directory, mode: 0o700) } catch {
            throw CommandError("cannot create \(directory): \(error)")
        }
        guard SafeFile.exists(key) else {
            let made = try KeyStores.generate(try store(), bits: 2048, to: key, options: options)
            say("created host key \(made.kid) (\(KeyStores.describe(made))) in \(key)")
            return made
        }
        return try loadKey()
    }

    /// The host key in `key`.
    func loadKey() throws(CommandError) -> DeviceKey {
        switch DeviceKeyLoader(tcti: options.tpmTCTI).load(key) {
        case let .success(loaded): return loaded
        case let .failure(e): throw CommandError("host key: \(e.message)")
        }
    }
}

import FingerAuthCore
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM

/// `fingerauth active-keys`: the device keys of this host's users that the authenticator
/// still holds active (or pending), each with the command that revokes it. The package's
/// prerm runs it while the binaries are still there: removing the package revokes nothing,
/// and a purge deletes this host's copy of the keys, after which nothing here can revoke
/// them. Asks `GET /v1/keys/<kid>` with the host token; the whole run waits on the network
/// for at most `--wait` seconds and never fails for it.
enum ActiveKeysCommand {
    static let usage = """
        usage: fingerauth active-keys [--wait S] [--config F] [--state-dir D]
          Asks the authenticator which device keys of this host's users it still holds active
          or pending, and prints each with the command that revokes it (on the authenticator:
          fingerauthd keys revoke --kid KID; here: fingerauth revoke --user USER). Prints
          nothing when no user has a registered key. This host's own key (remote approval) is
          named from its registration record. Waits on the network at most S seconds in
          all (default 4). The package's prerm runs it before the binaries are removed. Needs root.
          Exit status: 0 none active, 1 some active or not known, 2 wrong usage.
        """

    /// One registered key of one user, as this host knows it.
    struct Key {
        let user: String
        let kid: String
    }

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: ["config", "state-dir", "wait"])
        try Context.requireRoot("active-keys")
        let wait = try seconds(args["wait"])
        let options = try Context.loadOptions(args, requireURL: false)
        var status = deviceKeys(registeredKeys(options), options: options, wait: wait)
        if let kid = registeredHostKey(options) {
            say(
                "fingerauth: this host's own key (it signs remote-approval requests), \(kid), is registered at the "
                    + "authenticator by this host's record (not asked); a purge deletes it here. Unless revoked there "
                    + "already, revoke it on the authenticator: fingerauthd hosts revoke-key --kid \(kid)")
            status = 1
        }
        return status
    }

    /// The warning about `keys` still active at the authenticator, asked within `wait`
    /// seconds: 0 when none is (or there is none), else 1.
    private static func deviceKeys(_ keys: [Key], options: Options, wait: Int) -> Int32 {
        guard !keys.isEmpty else { return 0 }
        let prefix = "fingerauth: "
        guard let url = options.url?.text else {
            report(keys, title: "\(prefix)no url in the configuration: cannot ask whether these keys are still active")
            return 1
        }
        let authenticator = Authenticator(options: options)
        guard let token = try? authenticator.hostToken() else {
            report(keys, title: "\(prefix)no host token to ask \(url) whether these keys are still active")
            return 1
        }
        let deadline = MonotonicInstant.now().adding(milliseconds: Int64(wait) * 1000)
        var active: [(Key, String)] = []
        var unknown: [Key] = []
        var unreachable: String?
        for key in keys {
            let left = deadline.remaining
            guard unreachable == nil, left > 100 else {
                unknown.append(key)
                continue
            }
            var settings = HTTPSettings(options: options)
            settings.connectTimeoutMilliseconds = Int(min(left, 2000))
            settings.totalTimeoutMilliseconds = Int(left)
            switch HTTPClient.send(
                method: "GET", url: authenticator.keysURL + "/" + key.kid, body: nil,
                headers: ["Authorization: Bearer " + token], settings: settings)
            {
            case let .failure(failure):
                unreachable = failure.message
                unknown.append(key)
            case let .success(response):
                let json = try? JSONParser().parse(response.body)
                let status = json?["status"]?.stringValue
                switch (response.status, status) {
                case (200, "active"?), (200, "pending"?): active.append((key, status ?? "active"))
                case (200, _), (404, _): continue // revoked, or unknown there: nothing to revoke
                default: unknown.append(key)
                }
            }
        }
        if !active.isEmpty {
            say(
                "\(prefix)warning: device keys of this host's users are still active at the authenticator (\(url)); "
                    + "removing the package does not revoke them, and a purge deletes this host's copy:")
            for (key, status) in active {
                say("\(prefix)  \(key.user): key \(key.kid) (\(status))")
            }
            say("\(prefix)revoke them on the authenticator:")
            for (key, _) in active { say("\(prefix)  fingerauthd keys revoke --kid \(key.kid)") }
            let users = active.map { $0.0.user }
            say(
                "\(prefix)(or from this host, before removing the package: "
                    + users.map { "fingerauth revoke --user \($0)" }.joined(separator: "; ") + ")")
        }
        if !unknown.isEmpty {
            let why = unreachable.map { ": \(Authenticator.printable($0))" } ?? ""
            report(
                unknown,
                title: "\(prefix)could not learn within \(wait) s from \(url) whether these keys are still active\(why)"
            )
        }
        return active.isEmpty && unknown.isEmpty ? 0 : 1
    }

    /// Keys the admin may have to revoke by hand: each with its command on the authenticator.
    private static func report(_ keys: [Key], title: String) {
        say(title)
        for key in keys {
            say(
                "fingerauth:   \(key.user): key \(key.kid); if active, on the authenticator: fingerauthd keys revoke --kid \(key.kid)"
            )
        }
    }

    /// This host's own key when its registration record says it is registered. The
    /// authenticator is not asked: no endpoint tells a host its key's status.
    static func registeredHostKey(_ options: Options) -> String? {
        let paths = HostPaths(options)
        guard SafeFile.exists(paths.key), let record = try? Registration.load(paths.registration),
            record.status != "revoked", isKid(record.kid)
        else { return nil }
        return record.kid
    }

    /// Every user under the state directory whose registration record is not revoked (the
    /// device key's kid when the record names another), sorted by user.
    static func registeredKeys(_ options: Options) -> [Key] {
        var keys: [Key] = []
        for user in SafeFile.list(options.stateDirectory + "/users").sorted() where UserName.isValid(user) {
            let paths = StatePaths(root: options.stateDirectory, user: user)
            guard let record = try? Registration.load(paths.registration), record.status != "revoked" else { continue }
            var kids = [record.kid]
            if let current = DeviceKeyLoader.describe(paths.deviceKey)?.kid, current != record.kid {
                kids.append(current)
            }
            // A kid goes into a URL's path and a message: base64url only (a thumbprint is).
            for kid in kids where isKid(kid) { keys.append(Key(user: user, kid: kid)) }
        }
        return keys
    }

    private static func isKid(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    private static func seconds(_ text: String?) throws(UsageError) -> Int {
        guard let text else { return 4 }
        guard let value = Int(text), (1...30).contains(value) else {
            throw UsageError(message: "--wait must be a whole number of seconds from 1 to 30")
        }
        return value
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthKeyFormats
import FingerAuthLoginDomain
import FingerAuthOffline
import FingerAuthSystem

/// `fingerauth register`: sends the user's public key to the authenticator with this
/// host's enrollment token, and a proof signed by the key itself.
enum RegisterCommand {
    static let usage = """
        usage: fingerauth register [--user U] [--config F] [--state-dir D]
          POST /v1/keys with this host's enrollment token (token_file) and a proof signed by the key;
          a TPM key also sends its attestation (EK certificate, credential activation, TPM2_Certify);
          records kid, authenticator, time and status in <state_dir>/users/U/registration.
          Needs root. Exit status: 0 registered, 1 failed (the message says what to do), 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions)
        try Context.requireRoot("register")
        let context = try Context(args, requireURL: true)
        let key = try context.loadDeviceKey()
        let status = try register(key, context: context)
        say("registered key \(key.kid) for \(context.user) at \(keysURL(context.options)): \(status)")
        pendingHint(status, kid: key.kid)
        return 0
    }

    /// A key held for approval cannot log in yet: says who has to act.
    static func pendingHint(_ status: String, kid: String) {
        guard status == "pending" else { return }
        say("the authenticator holds this key until an admin approves it: fingerauthd keys approve --kid \(kid)")
    }

    /// `…/v1/keys` next to the login URL.
    static func keysURL(_ options: Options) -> String { Authenticator(options: options).keysURL }

    /// Registers `key` and records it in the user's `registration` file; returns the status.
    static func register(_ key: DeviceKey, context: Context) throws(CommandError) -> String {
        let options = context.options
        let authenticator = Authenticator(options: options)
        let token = try authenticator.hostToken()
        let host = authenticator.hostID
        let now = SystemClock().now()
        let proof = try authenticator.proof(
            signedBy: key, type: TokenType.registrationProof, subject: context.user, now: now)
        var members: [(String, JSONValue)] = [
            ("user", .string(context.user)), ("host", .string(host)), ("jwk", key.jwk.json),
            ("proof", .string(proof)),
        ]
        if let attestation = try KeyAttestation(authenticator: authenticator, token: token, user: context.user).member(
            for: key)
        {
            members.append(("attestation", attestation))
        }
        let body = JSONEncoding.encodeBytes(.object(members))
        let url = authenticator.keysURL
        switch authenticator.send("POST", url, body: body, token: token) {
        case let .failure(failure):
            throw CommandError("\(failure.message) (url \(url))", unreachable: true)
        case let .success(response):
            let json = try? JSONParser().parse(response.body)
            switch response.status {
            case 200, 201:
                let answered = json?["status"]?.stringValue ?? "active"
                // The status goes into root's registration file and onto root's terminal:
                // a word, never a line break (it could rewrite the recorded kid) or an
                // escape sequence.
                guard let status = Registration.statusWord(answered) else {
                    throw CommandError(
                        "the authenticator registered key \(key.kid) but answered an unreadable status "
                            + "(\(Authenticator.printable(answered))); nothing recorded in \(context.paths.registration): "
                            + "check the authenticator at \(url)")
                }
                do {
                    try Registration(kid: key.kid, authenticator: url, time: now, status: status)
                        .save(context.paths.registration)
                } catch {
                    throw CommandError("registered, but cannot record it: \(error)")
                }
                // The authenticator's offline-grant keys, pinned at enrollment.
                if let keys = json?["grant_keys"] {
                    try? GrantPins(stateDirectory: options.stateDirectory).pin(keys)
                }
                return status
            case 403 where json?["error"]?.stringValue == "ek_mismatch":
                throw CommandError(KeyAttestation.ekMismatch(host: host))
            case 403
            where key.isHardware && json?["error"]?.stringValue != "policy_denied"
                && json?["error"]?.stringValue != "hardware_key_required":
                throw CommandError("the authenticator refused the TPM attestation: \(Authenticator.reason(response))")
            case 401, 403:
                if let refusal = Authenticator.policyRefusal(response, user: context.user, host: host) {
                    throw CommandError(refusal)
                }
                if json?["error"]?.stringValue == "hardware_key_required" {
                    throw CommandError(
                        "the authenticator accepts only attested TPM keys (require-hardware-keys); "
                            + "make one: fingerauth key rotate --store tpm --user \(context.user)")
                }
                throw CommandError(
                    "the authenticator refused this host's enrollment token (\(options.tokenFile)): "
                        + Authenticator.reason(response))
            case 409 where json?["error"]?.stringValue == "too_many_keys":
                throw CommandError(
                    "\(context.user) already holds the most keys the authenticator allows on \(host) "
                        + "(max-keys-per-user-host); revoke one no longer used (fingerauthd keys list --user \(context.user), "
                        + "then fingerauthd keys revoke --kid KID)")
            case 429:
                throw CommandError(
                    "the authenticator takes no more registrations from \(host) for now "
                        + "(host-registrations, or too many refused requests from here); try again in a few minutes")
            case 409:
                if json?["error"]?.stringValue == "key_revoked" {
                    throw CommandError(
                        "the authenticator has revoked this key; make a new one: fingerauth key rotate --user \(context.user)"
                    )
                }
                throw CommandError("the authenticator has this key registered to another user or host")
            default:
                throw CommandError("the authenticator answered \(response.status): \(Authenticator.reason(response))")
            }
        }
    }

    /// Asks the authenticator whether its policy lets this host register a key for the
    /// user, before a finger is read. Throws only for a refusal by the policy; an
    /// authenticator that cannot say (unreachable, older, 5xx) lets the enrollment go on —
    /// the registration itself is decided again.
    static func checkPolicy(context: Context) throws(CommandError) {
        let authenticator = Authenticator(options: context.options)
        let token = try authenticator.hostToken()
        guard case let .denied(rule) = authenticator.checkPolicy(user: context.user, token: token) else { return }
        throw CommandError(Authenticator.policyText(user: context.user, host: authenticator.hostID, rule: rule))
    }
}

import FingerAuthCore

/// Every setting of FingerAuth, with its default. Built anew for each login from the
/// defaults, then `/etc/security/fingerauth.conf` (or `conf=`), then the pam.d arguments.
package struct Options: Equatable, Sendable {
    package static let defaultConfigPath = "/etc/security/fingerauth.conf"
    package static let defaultStateDirectory = "/var/lib/fingerauth"
    package static let defaultLoginHelper = "/usr/libexec/fingerauth/fingerauth-login"
    package static let defaultPAMHelper = "/usr/libexec/fingerauth/fingerauth-pam"
    package static let defaultSessionDirectory = "/run/fingerauth/sessions"
    package static let defaultAttemptsDirectory = "/run/fingerauth/attempts"
    package static let defaultTokenFile = "/etc/security/fingerauth.token"
    package static let defaultAgentSocket = AgentProtocol.defaultSocket
    package static let defaultLocaleDirectory = "/usr/share/locale"
    package static let defaultSystemBus = "/run/dbus/system_bus_socket"
    package static let defaultACPILidDirectory = "/proc/acpi/button/lid"

    /// Where the module POSTs the token (`url`). Required.
    package var url: AuthenticatorURL?
    /// `aud` of the token (`audience`); defaults to the url.
    package var audience: String?
    /// `iss` of the token (`host_id`); defaults to the host name.
    package var hostID: String?
    /// CA bundle for the authenticator's certificate (`cafile`).
    package var caFile: String?
    /// The authenticator's public-key pin: `sha256//BASE64` hashes (`;` between) or a key file (`pinned_pubkey`).
    package var pinnedPublicKey: String?
    /// Seconds to wait for a finger (`timeout`, 1–120).
    package var timeoutSeconds = 10
    /// Non-matching fingers before giving up (`max_tries`, 1–10).
    package var maxTries = 3
    /// Token lifetime in seconds (`ttl`, 1–300).
    package var ttlSeconds = 30
    /// Per-user state (`state_dir`).
    package var stateDirectory = Options.defaultStateDirectory
    /// The login helper's path (`login_helper`): the process that does the whole login step.
    package var loginHelper = Options.defaultLoginHelper
    /// fingerauth-pam's path (`pam_helper`): the process the module starts for each call,
    /// which makes the module's decisions outside the PAM host.
    package var pamHelper = Options.defaultPAMHelper
    /// Where `pam_sm_open_session` records remote sessions by audit session id (`session_dir`).
    package var sessionDirectory = Options.defaultSessionDirectory
    /// Where each user's failed fingerprint attempts are kept (`attempts_dir`, root 0700;
    /// `AttemptLimit`), by the module's root path and the agent alike.
    package var attemptsDirectory = Options.defaultAttemptsDirectory
    /// libfprint virtual reader socket, for tests and demos (`virtual_reader`).
    package var virtualReader: String?
    /// libfprint `virtual_device_storage` socket, a match-on-chip reader for tests
    /// (`virtual_storage_reader`).
    package var virtualStorageReader: String?
    /// The virtual reader stands for one on an external USB port (`virtual_reader_removable`,
    /// for tests of `lid`); by default it stands for a built-in one.
    package var virtualReaderRemovable = false
    /// `reader = libfprint | fprintd | auto` (`ReaderChoice`).
    package var reader = ReaderChoice.auto
    /// `lid = skip | ignore` (`LidPolicy`).
    package var lid = LidPolicy.skip
    /// The system bus's socket (`system_bus`), where fprintd and logind answer.
    package var systemBus = Options.defaultSystemBus
    /// Where the ACPI lid files are (`acpi_lid_dir`): `<dir>/*/state`, read when logind does
    /// not answer.
    package var acpiLidDirectory = Options.defaultACPILidDirectory
    /// Permit `http://` to a loopback authenticator (`allow_http`).
    package var allowHTTP = false
    /// Run for remote sessions too (`remote=allow`); by default they are skipped.
    package var allowRemote = false
    /// `remote=approve`: a remote login asks the authenticator that the user approve it with
    /// a finger on their own workstation (docs/ARCHITECTURE.md, "Remote approval").
    package var remoteApproval = false
    /// How long a remote approval waits for the person's finger (`approve_timeout`), seconds:
    /// below sshd's `LoginGraceTime` and sudo's password timeout.
    package var approveTimeoutSeconds = 30
    /// `approve_callers = self | any`: whether a remote approval is asked when the caller is
    /// another user than the one logging in (`su bob` in alice's ssh session). By default
    /// it is not: the login goes on as a remote one, to the stack's next method.
    package var approveCallers = ApproveCallers.ownUser
    /// Step-by-step log lines (`debug`).
    package var debug = false
    /// Where debug lines go instead of syslog (`debug_file`).
    package var debugFile: String?
    /// The module does nothing (`disabled`).
    package var disabled = false
    /// This host's enrollment token for registering keys (`token_file`; the CLI only).
    package var tokenFile = Options.defaultTokenFile
    /// The agent's socket (`agent_socket`): where a module running as the user (a screen
    /// locker) asks `fingerauth-agent`, and where the agent listens unless socket-activated.
    package var agentSocket = Options.defaultAgentSocket
    /// `prompt = sequential | parallel`: the finger first and then the stack's password
    /// prompt (the default), or one prompt that takes the password while the reader waits
    /// (only on the caller's own terminal; elsewhere sequential, silently).
    package var prompt = PromptMode.sequential
    /// The admin's words for the texts the user sees (`text.NAME = …`, `text.NAME.SERVICE = …`),
    /// keyed `NAME` or `NAME.SERVICE` (`PromptTexts`).
    package var texts: [String: String] = [:]
    /// Where the translations are (`locale_dir`): `<dir>/<lang>/LC_MESSAGES/fingerauth.mo`.
    package var localeDirectory = Options.defaultLocaleDirectory
    /// Where `fingerauth key create|rotate` puts a new device key (`key_store`). `file` by
    /// default: a TPM key registers only with an authenticator that trusts the TPM's EK CA
    /// (`--tpm-ek-ca`), so a fleet opts in once its authenticator does.
    package var keyStore = KeyStoreChoice.file
    /// Which TPM holds TPM keys (`tpm_tcti`): a TCTI string, e.g. `device:/dev/tpmrm0` (the
    /// default when unset) or `swtpm:host=127.0.0.1,port=2321`.
    package var tpmTCTI: String?
    /// Extra claims (`claim.NAME = value`); they never replace the standard ones.
    package var extraClaims: [(String, String)] = []

    package init() {}

    /// Equal when every setting of `OptionTable` has the same value, and the texts and
    /// extra claims are the same.
    package static func == (a: Options, b: Options) -> Bool {
        OptionTable.entries.allSatisfy { $0.value(in: a) == $0.value(in: b) } && a.texts == b.texts
            && a.extraClaims.map({ $0.0 + "=" + $0.1 }) == b.extraClaims.map({ $0.0 + "=" + $0.1 })
    }

    /// The names of the claims FingerAuth sets itself; `claim.NAME` cannot use them.
    package static let reservedClaims: Set<String> = [
        "iss", "sub", "aud", "iat", "nbf", "exp", "jti", "amr", "service", "client_service",
    ]

    /// Sets one key: a key of `OptionTable`, `text.NAME[.SERVICE]` or `claim.NAME`. `source`
    /// names the file and line or the pam.d argument for errors.
    package mutating func set(_ key: String, _ value: String, source: String) throws(ConfigError) {
        func error(_ m: String) -> ConfigError { ConfigError(source: source, key: key, message: m) }
        if let entry = OptionTable.entry(key) {
            if let problem = entry.set(&self, value) { throw error(problem) }
        } else if key.hasPrefix("text.") {
            let name = key.dropFirst(5)
            let parts = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = parts.first, TextName(rawValue: String(first)) != nil else {
                throw error(
                    "unknown text; the texts are " + TextName.allCases.map { $0.rawValue }.joined(separator: ", "))
            }
            if parts.count == 2 {
                guard ServiceName.isValid(parts[1]) else {
                    throw error("the service after the text's name must be a PAM service name")
                }
            }
            guard let text = OptionTable.text(value) else { throw error("must be 1 to 256 printable characters") }
            texts[String(name)] = text
        } else if key.hasPrefix("claim.") {
            let name = String(key.dropFirst(6))
            guard PortableWord.isValid(name), !name.contains(".") else {
                throw error("claim names are letters, digits, _ and -")
            }
            guard !Options.reservedClaims.contains(name) else { throw error("cannot replace a standard claim") }
            guard let text = OptionTable.text(value) else { throw error("must be 1 to 256 printable characters") }
            extraClaims.removeAll { $0.0 == name }
            extraClaims.append((name, text))
        } else {
            throw error("unknown key" + (NearestKey.suggestion(for: key).map { "; did you mean `\($0)`?" } ?? ""))
        }
    }

    /// Checks what cannot be checked key by key: a url is set, http only when allowed, to
    /// loopback, and to a privileged port — below `unprivilegedPortStart`, the kernel's
    /// `net.ipv4.ip_unprivileged_port_start` (1024 unless changed) — so that no local user
    /// can listen there and stand in for the authenticator. `unprivilegedPortStart` is asked
    /// only for an http:// url.
    package func validated(source: String, unprivilegedPortStart: @autoclosure () -> Int = 1024) throws(ConfigError)
        -> Options
    {
        guard let url else { throw ConfigError(source: source, key: "url", message: "is not set") }
        if !url.isHTTPS {
            guard allowHTTP else {
                throw ConfigError(source: source, key: "url", message: "http:// needs allow_http (loopback only)")
            }
            guard url.isLoopback else {
                throw ConfigError(source: source, key: "url", message: "http:// is allowed only to a loopback address")
            }
            let limit = unprivilegedPortStart()
            guard url.effectivePort < limit else {
                throw ConfigError(
                    source: source, key: "url",
                    message:
                        "http:// is allowed only to a privileged loopback port (below \(limit), net.ipv4.ip_unprivileged_port_start)"
                )
            }
        }
        return self
    }

    /// The audience put in tokens: `audience`, else the url.
    package var effectiveAudience: String { audience ?? url?.text ?? "" }
}

extension Options {
    /// The TCTI strings accepted: `device:`, `swtpm:` or `mssim:`, then printable
    /// characters without spaces, at most 256 bytes (the TSS's TCTI loader would dlopen
    /// whatever other name it were given).
    package static func isValidTCTI(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count > 7, bytes.count <= 256, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        return ["device:", "swtpm:", "mssim:"].contains { text.hasPrefix($0) }
    }
}

/// Where new device keys are made (`key_store`).
package enum KeyStoreChoice: String, Equatable, Sendable, CaseIterable {
    /// In the TPM; creating a key fails when no TPM answers.
    case tpm
    /// A PKCS#8 file, root 0600.
    case file
    /// The TPM when one answers at `tpm_tcti` (or `/dev/tpmrm0`) and holds an EK
    /// certificate (without one it cannot be attested), else a file.
    case auto
}

/// Whose logins a remote approval is asked for (`approve_callers`).
package enum ApproveCallers: String, Equatable, Sendable, CaseIterable {
    /// Only a login asked for by the user themself: sshd's, or sudo's in their own session.
    case ownUser = "self"
    /// Also one asked for by another user; the person then sees who asks.
    case anyone = "any"
}

/// How the module asks at a terminal (`prompt`).
package enum PromptMode: String, Equatable, Sendable, CaseIterable {
    /// The finger first; the stack's own password prompt when the finger path ends.
    case sequential
    /// "Password or place your finger: " once, while the helper waits for the finger.
    case parallel
}

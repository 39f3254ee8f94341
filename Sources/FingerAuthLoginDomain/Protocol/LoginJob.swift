import FingerAuthCore

/// Everything the login helper needs for one login, as the module decided it: the user, the
/// PAM service, the `jti` the module chose, the token's issuer, and the settings from
/// root-owned configuration. The module writes it to the helper's standard input as
/// `key=value` lines; the helper reads nothing else (no environment, no configuration file).
package struct LoginJob: Equatable, Sendable {
    package var user: String
    package var service: String
    /// 128 random bits, base64url, chosen by the module: the verdict must echo it.
    package var jti: String
    /// `iss` of the token: `host_id`, else the host name.
    package var issuer: String
    package var options: Options
    /// `prompt = parallel` only: the caller's terminal, for the newline after an acceptance.
    package var terminal: TerminalTarget?
    /// The agent's logins only: the service the client named, for the token's
    /// `client_service` claim (nobody vouches for it; `service` is then the agent's name).
    package var clientService: String?
    /// `remote = approve` only: no finger here; the helper asks the authenticator that the
    /// user approve this login on their own workstation (`RemoteApprovalFlow`).
    package var approval: ApprovalAsk?

    package init(
        user: String, service: String, jti: String, issuer: String, options: Options,
        terminal: TerminalTarget? = nil
    ) {
        self.user = user
        self.service = service
        self.jti = jti
        self.issuer = issuer
        self.options = options
        self.terminal = terminal
    }

    /// Largest request accepted on either side. The module refuses to start a login whose
    /// request is larger (a pipe holds 64 KiB, so writing this much never blocks).
    package static let maxBytes = 32 * 1024

    /// The request as `key=value` lines: the login's own, then each option of `OptionTable`
    /// that travels to the helper, then the extra claims and the terminal.
    package var text: String {
        var lines = ["user=" + user, "service=" + service, "jti=" + jti, "issuer=" + issuer]
        if let clientService { lines.append("client_service=" + clientService) }
        if let approval {
            lines.append("approve_rhost=" + approval.clientAddress)
            lines.append("approve_tty=" + approval.terminal)
            if !approval.caller.isEmpty { lines.append("approve_caller=" + approval.caller) }
        }
        for entry in OptionTable.entries {
            if let value = entry.wireValue(options) { lines.append(entry.key + "=" + value) }
        }
        for (name, value) in options.extraClaims { lines.append("claim." + name + "=" + value) }
        if let terminal {
            lines.append("terminal=" + terminal.path)
            lines.append("terminal_device=\(terminal.device)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Reads a request; every value is checked as the configuration file's would be.
    package static func parse(_ text: String, unprivilegedPortStart: @autoclosure () -> Int = 1024) throws(ConfigError)
        -> LoginJob
    {
        guard text.utf8.count <= maxBytes else {
            throw ConfigError(source: "request", message: "larger than \(maxBytes) bytes")
        }
        var user: String?
        var service: String?
        var clientService: String?
        var jti: String?
        var issuer: String?
        var terminalPath: String?
        var terminalDevice: UInt64?
        var approveAddress: String?
        var approveTerminal: String?
        var approveCaller: String?
        var options = Options()
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: true) {
            number += 1
            let source = "request line \(number)"
            guard let eq = raw.firstIndex(of: "=") else {
                throw ConfigError(source: source, message: "expected key=value")
            }
            let key = String(raw[..<eq])
            let value = String(raw[raw.index(after: eq)...])
            switch key {
            case "user":
                guard user == nil, UserName.isValid(value) else {
                    throw ConfigError(
                        source: source, key: key, message: "not a user name FingerAuth accepts (\(UserName.rule))")
                }
                user = value
            case "service":
                guard service == nil, ServiceName.isValid(value) else {
                    throw ConfigError(source: source, key: key, message: "not a service name (\(ServiceName.rule))")
                }
                service = value
            case "client_service":
                guard clientService == nil, ServiceName.isValid(value) else {
                    throw ConfigError(source: source, key: key, message: "not a service name (\(ServiceName.rule))")
                }
                clientService = value
            case "jti":
                guard jti == nil, value.utf8.count == 22, Base64URL.decode(value)?.count == 16 else {
                    throw ConfigError(source: source, key: key, message: "not 128 bits in base64url")
                }
                jti = value
            case "issuer":
                guard issuer == nil, isPrintable(value, limit: 256) else {
                    throw ConfigError(source: source, key: key, message: "not a host id")
                }
                issuer = value
            case "approve_rhost":
                guard approveAddress == nil, ApprovalAsk.isWord(value, limit: 255) else {
                    throw ConfigError(source: source, key: key, message: "not a client address")
                }
                approveAddress = value
            case "approve_tty":
                guard approveTerminal == nil, ApprovalAsk.isWord(value, limit: 64) else {
                    throw ConfigError(source: source, key: key, message: "not a terminal name")
                }
                approveTerminal = value
            case "approve_caller":
                guard approveCaller == nil, !value.isEmpty, ApprovalAsk.isWord(value, limit: 64) else {
                    throw ConfigError(source: source, key: key, message: "not a user name")
                }
                approveCaller = value
            case "terminal":
                guard terminalPath == nil, let path = TerminalTarget.devicePath(fromPAMTTY: value), path == value else {
                    throw ConfigError(source: source, key: key, message: "not a terminal device path")
                }
                terminalPath = path
            case "terminal_device":
                guard terminalDevice == nil, let device = UInt64(value) else {
                    throw ConfigError(source: source, key: key, message: "not a device number")
                }
                terminalDevice = device
            default:
                guard OptionTable.entry(key)?.travelsToHelper == true || key.hasPrefix("claim.") else {
                    throw ConfigError(source: source, key: key, message: "not a key of the request")
                }
                try options.set(key, value, source: source)
            }
        }
        guard let user, let service, let jti, let issuer else {
            throw ConfigError(source: "request", message: "user, service, jti and issuer are required")
        }
        var terminal: TerminalTarget?
        switch (terminalPath, terminalDevice) {
        case let (path?, device?): terminal = TerminalTarget(path: path, device: device)
        case (nil, nil): terminal = nil
        default: throw ConfigError(source: "request", message: "terminal and terminal_device go together")
        }
        var job = LoginJob(
            user: user, service: service, jti: jti, issuer: issuer,
            options: try options.validated(source: "request", unprivilegedPortStart: unprivilegedPortStart()),
            terminal: terminal)
        job.clientService = clientService
        switch (approveAddress, approveTerminal) {
        case let (address?, terminal?):
            job.approval = ApprovalAsk(clientAddress: address, terminal: terminal, caller: approveCaller ?? "")
        case (nil, nil):
            guard approveCaller == nil else {
                throw ConfigError(source: "request", message: "approve_caller needs approve_rhost and approve_tty")
            }
        default: throw ConfigError(source: "request", message: "approve_rhost and approve_tty go together")
        }
        return job
    }

    /// 1…`limit` bytes, none of them a control character (so a value stays on its line).
    package static func isPrintable(_ text: String, limit: Int) -> Bool {
        let bytes = Array(text.utf8)
        return !bytes.isEmpty && bytes.count <= limit && bytes.allSatisfy { $0 >= 0x20 && $0 != 0x7f }
    }
}

/// Byte-for-byte equality of two strings. Swift's `==` on `String` compares canonical
/// equivalence ("\u{212A}" equals "K"); identities (users, token ids, key ids) must not.
package func sameBytes(_ a: String, _ b: String) -> Bool {
    a.utf8.elementsEqual(b.utf8)
}

/// What a remote approval's request names besides the user and the service: where the
/// login comes from, as the person will see it on their workstation.
package struct ApprovalAsk: Equatable, Sendable {
    /// The client's address (`PAM_RHOST`, or the remote session's record); empty when unknown.
    package var clientAddress: String
    /// The login's terminal (`PAM_TTY`, e.g. `pts/3` or `ssh`); empty when none.
    package var terminal: String
    /// Who asks when that is another user than the one logging in (the setuid host's real
    /// user, or `PAM_RUSER`); empty when it is the user themself or nobody says.
    package var caller: String

    package init(clientAddress: String, terminal: String, caller: String = "") {
        self.clientAddress = clientAddress
        self.terminal = terminal
        self.caller = caller
    }

    /// Empty, or printable ASCII without spaces of at most `limit` bytes: what the
    /// authenticator takes in its `rhost` and `tty` claims.
    package static func isWord(_ text: String, limit: Int) -> Bool {
        text.utf8.count <= limit && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }
}

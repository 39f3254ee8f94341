import FingerAuthCore
import FingerAuthTransport

#if canImport(Glibc)
import Glibc
#endif

/// Where `admin create` and `admin reset` point their setup link: `--console-url`, else the
/// console that the configuration's `admin-listen` turns on. Without that line no console
/// runs, and the link would answer nothing: the address is then the one the admin is told
/// to add, with the line to add and what to restart.
struct ConsoleLink {
    static let defaultPort: UInt16 = 8444

    /// `scheme://host:port`, no trailing slash.
    let base: String
    /// What the admin must do before the link answers; empty when the console is on (or
    /// `--console-url` names it).
    let toTurnOn: [String]

    init(_ options: Options, command: String) throws(UsageError) {
        if let given = options.optional("console-url") {
            guard given.hasPrefix("https://") || given.hasPrefix("http://") else {
                throw UsageError(message: "\(command): console-url must start with https://")
            }
            base = given.hasSuffix("/") ? String(given.dropLast()) : given
            toTurnOn = []
            return
        }
        let path = options.optional("config") ?? ConfigFile.defaultPath
        let file = try ConfigFile.load(options.optional("config"), command: command)
        // The console shares the login listener's TLS certificate; without one it is plain HTTP
        // (allowed on loopback only).
        let scheme = file["tls-cert"] == nil ? "http://" : "https://"
        if let configured = file["admin-listen"] {
            let text = configured.allSatisfy(\.isNumber) ? "127.0.0.1:" + configured : configured
            guard let listen = ListenAddress(text) else {
                throw UsageError(
                    message:
                        "\(command): \(path): admin-listen takes a port (on 127.0.0.1) or a numeric address and port"
                )
            }
            base = scheme + Self.reachable(listen) + ":\(listen.port)"
            // The line is there, but a serve started before it was added has no console yet.
            toTurnOn =
                Self.answers(listen, milliseconds: 1000)
                ? []
                : [
                    "nothing listens on \(Self.reachable(listen)):\(listen.port) yet, so nothing answers the link: "
                        + "restart fingerauthd to open the console: \(Self.restart(path))"
                ]
            return
        }
        let loginPort = file["listen"].flatMap(ListenAddress.init)?.port
        let port = loginPort == Self.defaultPort ? Self.defaultPort + 1 : Self.defaultPort
        base = scheme + "127.0.0.1:\(port)"
        let restart = Self.restart(path)
        toTurnOn = [
            "the console is off: \(path) has no admin-listen line, so nothing answers the link until you turn it on:",
            "  1. add this line to \(path):   admin-listen = 127.0.0.1:\(port)",
            "  2. restart fingerauthd:   \(restart)",
            "(the console then listens on loopback only: from another machine, ssh -L \(port):127.0.0.1:\(port) to this one)",
        ]
    }

    /// How the line before the link ends: the link follows at once, or after what turns the
    /// console on.
    var lead: String { toTurnOn.isEmpty ? ":" : " is the last line below" }

    /// How to restart the fingerauthd that reads `path`.
    static func restart(_ path: String) -> String {
        path == ConfigFile.defaultPath
            ? "systemctl restart fingerauthd (without systemd: stop `fingerauthd serve` and start it again)"
            : "stop `fingerauthd serve --config \(path)` and start it again"
    }

    /// Whether something on this machine accepts a TCP connection where `listen` binds (a
    /// wildcard by loopback) within `milliseconds`.
    static func answers(_ listen: ListenAddress, milliseconds: Int32) -> Bool {
        let host = reachable(listen)
        guard let target = ListenAddress(host + ":\(listen.port)") else { return false }
        let fd = socket(
            target.family == .ipv6 ? AF_INET6 : AF_INET,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let (started, error) =
            target.withSocketAddress { address, length in (connect(fd, address, length), errno) }
            ?? (-1, EINVAL)
        if started == 0 { return true }
        guard error == EINPROGRESS else { return false }
        var watched = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&watched, 1, milliseconds) == 1 else { return false }
        var failure: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size) == 0 && failure == 0
    }

    /// The host of a listener as a browser on this machine reaches it: a wildcard address
    /// (every interface) by loopback.
    static func reachable(_ listen: ListenAddress) -> String {
        switch listen.host {
        case "0.0.0.0": return "127.0.0.1"
        case "::", "::0": return "[::1]"
        default: return listen.urlHost
        }
    }
}

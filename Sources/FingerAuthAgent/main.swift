import CSystem
import FingerAuthCore
import FingerAuthSystem
#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth-agent`: fingerprint login for PAM hosts that run as the user (screen
/// lockers). A root service on a Unix stream socket: systemd's socket activation
/// (`fingerauth-agent.socket`, LISTEN_FDS) or, by hand and in tests, a socket it creates at
/// `agent_socket` from the configuration (or `--listen`).
let usage = """
    usage: fingerauth-agent [--config F] [--listen PATH] [--stderr] [--version]
      Answers fingerprint logins for the caller's own user (SO_PEERCRED) with the login
      helper, as the PAM module does as root. --config names the configuration (default
      /etc/security/fingerauth.conf, read again for every request); --listen overrides its
      agent_socket; --stderr copies the log lines to standard error. Must run as root.
    """

func fail(_ text: String) -> Never {
    fputs("fingerauth-agent: \(text)\n", stderr)
    exit(1)
}

var configPath = Options.defaultConfigPath
var listenPath: String?
var copyToStderr = false
var words = Array(CommandLine.arguments.dropFirst())
while !words.isEmpty {
    let word = words.removeFirst()
    switch word {
    case "--config", "--listen":
        guard let value = words.first, value.hasPrefix("/") else { fail("\(word) needs an absolute path\n" + usage) }
        words.removeFirst()
        if word == "--config" { configPath = value } else { listenPath = value }
    case "--stderr": copyToStderr = true
    case "--version":
        print("fingerauth-agent \(agentVersion) (protocol \(AgentProtocol.version))")
        exit(0)
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        fputs(usage + "\n", stderr)
        exit(2)
    }
}
guard geteuid() == 0 else { fail("must run as root (it reads the root-only state and starts the login helper as root)") }
signal(SIGPIPE, SIG_IGN)
umask(0o077)
openlog("fingerauth-agent", LOG_PID | (copyToStderr ? fa_log_perror() : 0), LOG_AUTHPRIV)

let options: Options
do {
    options = try OptionsLoader.load(arguments: ["conf=" + configPath], requireURL: false, readFile: ConfigurationFile.read)
} catch {
    fail("configuration: \(error)")
}
let socketPath = listenPath ?? options.agentSocket
let listener: Int32
switch AgentListener.open(path: socketPath) {
case let .success((fd, activated)):
    listener = fd
    let how = activated ? "the socket passed by systemd (LISTEN_FDS); lock \(socketPath).lock" : socketPath
    fa_syslog(LOG_AUTHPRIV | LOG_INFO, "listening on \(how) (protocol \(AgentProtocol.version), version \(agentVersion))")
case let .failure(why): fail(why.message)
}
let server = AgentServer(listenFD: listener, configPath: configPath, lockPath: socketPath + ".lock")
exit(server.run())

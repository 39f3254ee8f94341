import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
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
      Each option once; a mistake in these words exits with status 2.
    """

func fail(_ text: String) -> Never {
    printError("fingerauth-agent: \(text)")
    exit(1)
}

let words = Array(CommandLine.arguments.dropFirst())
if CommandArguments.asksForHelp(words) {
    print(usage)
    exit(0)
}
let arguments: CommandArguments
do throws(UsageError) {
    arguments = try CommandArguments(words, valued: ["config", "listen"], switches: ["stderr", "version"])
    for name in ["config", "listen"] where arguments[name].map({ !$0.hasPrefix("/") }) ?? false {
        throw UsageError(message: "--\(name) needs an absolute path")
    }
} catch {
    printError("fingerauth-agent: \(error.message)\n\(usage)")
    exit(2)
}
if arguments.has("version") {
    print("fingerauth-agent \(agentVersion) (protocol \(AgentProtocol.version))")
    exit(0)
}
let configPath = arguments["config"] ?? Options.defaultConfigPath
let listenPath = arguments["listen"]
let copyToStderr = arguments.has("stderr")
guard geteuid() == 0 else {
    fail("must run as root (it reads the root-only state and starts the login helper as root)")
}
signal(SIGPIPE, SIG_IGN)
umask(0o077)
openlog("fingerauth-agent", LOG_PID | (copyToStderr ? fa_log_perror() : 0), LOG_AUTHPRIV)

let options: Options
do {
    options = try OptionsLoader.load(
        arguments: ["conf=" + configPath], requireURL: false, readFile: ConfigurationFile.read)
} catch {
    fail("configuration: \(error)")
}
let socketPath = listenPath ?? options.agentSocket
let listener: Int32
switch AgentListener.open(path: socketPath) {
case let .success((fd, activated)):
    listener = fd
    let how = activated ? "the socket passed by systemd (LISTEN_FDS); lock \(socketPath).lock" : socketPath
    fa_syslog(
        LOG_AUTHPRIV | LOG_INFO, "listening on \(how) (protocol \(AgentProtocol.version), version \(agentVersion))")
case let .failure(why): fail(why.message)
}
let server = AgentServer(listenFD: listener, configPath: configPath, lockPath: socketPath + ".lock")
exit(server.run())

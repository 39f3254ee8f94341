#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth`: the command line for people — enroll fingers, manage and register keys.
let usage = """
    fingerauth — fingerprint login with a remote authenticator

    usage: fingerauth COMMAND [options]

    commands:
      enroll      read a finger and save the print; create and register the device key
      key create  make the user's device key (RSA, root 0600)
      key show    print the key id (RFC 7638 thumbprint) and the public JWK
      register    register the device key with the authenticator (needs the host token)

    common options:
      --user U         the user (default: $SUDO_USER under sudo, else you)
      --config F       configuration file (default /etc/security/fingerauth.conf)
      --state-dir D    state directory (default /var/lib/fingerauth)

    exit status: 0 done, 1 failed (the message says what to do), 2 wrong usage
    """

func commandUsage(_ command: String) -> String {
    switch command {
    case "enroll": return EnrollCommand.usage
    case "key": return KeyCommands.usage
    case "register": return RegisterCommand.usage
    default: return usage
    }
}

let words = Array(CommandLine.arguments.dropFirst())
let command = words.first ?? "help"
let rest = Array(words.dropFirst())
if command == "help" || command == "--help" || command == "-h" {
    print(rest.first.map(commandUsage) ?? usage)
    exit(0)
}
if rest.contains("--help") || rest.contains("-h") {
    print(commandUsage(command))
    exit(0)
}
do {
    let status: Int32
    switch command {
    case "enroll": status = try EnrollCommand.run(rest)
    case "key": status = try KeyCommands.run(rest)
    case "register": status = try RegisterCommand.run(rest)
    default: throw UsageError("unknown command '\(command)'")
    }
    exit(status)
} catch let error as UsageError {
    printError("fingerauth: \(error.message)")
    printError(commandUsage(command))
    exit(2)
} catch let error as CommandError {
    printError("fingerauth: \(error.message)")
    exit(error.status)
} catch {
    printError("fingerauth: \(error)")
    exit(1)
}

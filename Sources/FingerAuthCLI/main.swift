import FingerAuthCore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth`: the command line for people — enroll fingers, manage and register keys,
/// test the login, diagnose what blocks it.
let usage = """
    fingerauth — fingerprint login with a remote authenticator

    usage: fingerauth COMMAND [options]      (fingerauth COMMAND --help for each)

    commands:
      enroll       read a finger and save the print; create and register the device key
      list         the user's enrolled fingers
      remove       delete one print (--finger NAME) or all of them (--all)
      key          create | show | rotate the user's device key
      register     register the device key with the authenticator (needs the host token)
      revoke       revoke the device key (or --kid) at the authenticator
      reset        revoke at the authenticator, then delete prints, key and registration
      test         run the whole login as the PAM module does, one timed line per step
      status       checklist of everything fingerprint login needs, each with its fix
      pam-line     the line to add to /etc/pam.d/SERVICE
      trial        try it without a fingerprint reader: start | touch | stop (a virtual reader)
      sync         offline grants: drop withdrawn ones, upload offline logins (a timer runs it)
      host         register | status this host's own key (signs its remote-approval requests)
      approve      approve (finger) or deny (--deny) the user's pending remote-approval request
      active-keys  this host's users' keys still active at the authenticator (before a removal)

    common options:
      --user U         the user (default: $SUDO_USER under sudo, else you)
      --config F       configuration file (default /etc/security/fingerauth.conf)
      --state-dir D    state directory (default /var/lib/fingerauth)
      --json           machine-readable output (list, key show, status, pam-line)

    All commands but pam-line and help need root; status run as a user checks that user's
    screen-locker path (the configuration and fingerauth-agent).
    exit status: 0 done, 1 failed (the message says what to do; for test and status: the
    login would not succeed), 2 wrong usage
    """

func commandUsage(_ command: String) -> String {
    switch command {
    case "enroll": return EnrollCommand.usage
    case "list": return ListCommand.usage
    case "remove": return RemoveCommand.usage
    case "key": return KeyCommands.usage
    case "register": return RegisterCommand.usage
    case "revoke": return RevokeCommand.usage
    case "reset": return ResetCommand.usage
    case "test": return TestCommand.usage
    case "status", "doctor": return StatusCommand.usage
    case "pam-line": return PamLineCommand.usage
    case "trial": return TrialCommand.usage
    case "sync": return SyncCommand.usage
    case "host": return HostCommand.usage
    case "approve": return ApproveCommand.usage
    case "active-keys": return ActiveKeysCommand.usage
    default: return usage
    }
}

// OpenSSL writes to its sockets with plain write(2): a server that closed the connection
// would otherwise end the command with SIGPIPE instead of an error message.
signal(SIGPIPE, SIG_IGN)
let words = Array(CommandLine.arguments.dropFirst())
let command = words.first ?? "help"
let rest = Array(words.dropFirst())
if command == "help" || command == "--help" || command == "-h" {
    print(rest.first.map(commandUsage) ?? usage)
    exit(0)
}
if CommandArguments.asksForHelp(rest) {
    print(commandUsage(command))
    exit(0)
}
do {
    let status: Int32
    switch command {
    case "enroll": status = try EnrollCommand.run(rest)
    case "list": status = try ListCommand.run(rest)
    case "remove": status = try RemoveCommand.run(rest)
    case "key": status = try KeyCommands.run(rest)
    case "register": status = try RegisterCommand.run(rest)
    case "revoke": status = try RevokeCommand.run(rest)
    case "reset": status = try ResetCommand.run(rest)
    case "test": status = try TestCommand.run(rest)
    case "status", "doctor": status = try StatusCommand.run(rest)
    case "pam-line": status = try PamLineCommand.run(rest)
    case "trial": status = try TrialCommand.run(rest)
    case "sync": status = try SyncCommand.run(rest)
    case "host": status = try HostCommand.run(rest)
    case "approve": status = try ApproveCommand.run(rest)
    case "active-keys": status = try ActiveKeysCommand.run(rest)
    default: throw UsageError.unknownCommand(command)
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

// fingerauthd: the FingerAuth reference authenticator. This file only dispatches the
// subcommand; each one lives in its own file.
#if canImport(Glibc)
import Glibc
#endif

/// Runs the command line and returns the exit status (0 ok, 1 failure, 2 usage).
func runCommandLine(_ arguments: [String]) -> Int32 {
    let args = arguments.dropFirst()
    let rest = args.dropFirst(2)
    do {
        switch (args.first, args.dropFirst().first) {
        case ("--help", _), ("-h", _), ("help", _):
            print(Usage.text)
            return 0
        case ("serve", _):
            return try ServeCommand.run(args.dropFirst())
        case ("audit", _):
            return try AuditCommand.run(args.dropFirst())
        case ("token", "create"): return try TokenCommands.create(rest)
        case ("token", "list"): return try TokenCommands.list(rest)
        case ("token", "revoke"): return try TokenCommands.revoke(rest)
        case ("keys", "list"): return try KeyCommands.list(rest)
        case ("keys", "approve"): return try KeyCommands.approve(rest)
        case ("keys", "revoke"): return try KeyCommands.revoke(rest)
        case ("policy", "list"): return try PolicyCommands.list(rest)
        case ("policy", "add"): return try PolicyCommands.add(rest)
        case ("policy", "remove"): return try PolicyCommands.remove(rest)
        case ("policy", "move"): return try PolicyCommands.move(rest)
        case ("policy", "test"): return try PolicyCommands.test(rest)
        case ("hosts", "list"): return try PolicyCommands.hosts(rest)
        case ("hosts", "label"): return try PolicyCommands.label(rest)
        case ("hosts", "unlabel"): return try PolicyCommands.unlabel(rest)
        case ("hosts", "add-ek"): return try EKCommands.add(rest)
        case ("hosts", "reset-ek"): return try EKCommands.reset(rest)
        case ("users", "list"): return try PolicyCommands.users(rest)
        case ("users", "add"): return try PolicyCommands.addUsers(rest)
        case ("users", "remove"): return try PolicyCommands.removeUsers(rest)
        case ("admin", "create"): return try AdminCommands.create(rest)
        case ("admin", "list"): return try AdminCommands.list(rest)
        case ("doctor", _): return try DoctorCommand.run(args.dropFirst())
        case (nil, _):
            throw UsageError(message: "a command is needed: serve, token, keys, policy, hosts, users, admin, audit or doctor; see 'fingerauthd --help'")
        default:
            let words = args.prefix(2).joined(separator: " ")
            throw UsageError(message: "unknown command '\(words)'; see 'fingerauthd --help'")
        }
    } catch let error as UsageError {
        fputs("fingerauthd: \(error.message)\n", stderr)
        return 2
    } catch {
        fputs("fingerauthd: \(error)\n", stderr)
        return 2
    }
}

exit(runCommandLine(CommandLine.arguments))

// fingerauthd: the FingerAuth reference authenticator. This file only dispatches the
// subcommand; each one lives in its own file.
import FingerAuthCore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// One subcommand: the words that name it and what runs it with the words after them.
struct DaemonCommand {
    let words: [String]
    let run: (ArraySlice<String>) throws(UsageError) -> Int32
}

let commands: [DaemonCommand] = [
    DaemonCommand(words: ["init"], run: InitCommand.run),
    DaemonCommand(words: ["serve"], run: ServeCommand.run),
    DaemonCommand(words: ["audit"], run: AuditCommand.run),
    DaemonCommand(words: ["doctor"], run: DoctorCommand.run),
    DaemonCommand(words: ["token", "create"], run: TokenCommands.create),
    DaemonCommand(words: ["token", "list"], run: TokenCommands.list),
    DaemonCommand(words: ["token", "revoke"], run: TokenCommands.revoke),
    DaemonCommand(words: ["keys", "list"], run: KeyCommands.list),
    DaemonCommand(words: ["keys", "approve"], run: KeyCommands.approve),
    DaemonCommand(words: ["keys", "revoke"], run: KeyCommands.revoke),
    DaemonCommand(words: ["policy", "list"], run: PolicyCommands.list),
    DaemonCommand(words: ["policy", "add"], run: PolicyCommands.add),
    DaemonCommand(words: ["policy", "remove"], run: PolicyCommands.remove),
    DaemonCommand(words: ["policy", "move"], run: PolicyCommands.move),
    DaemonCommand(words: ["policy", "test"], run: PolicyCommands.test),
    DaemonCommand(words: ["hosts", "list"], run: PolicyCommands.hosts),
    DaemonCommand(words: ["hosts", "label"], run: PolicyCommands.label),
    DaemonCommand(words: ["hosts", "unlabel"], run: PolicyCommands.unlabel),
    DaemonCommand(words: ["hosts", "add-ek"], run: EKCommands.add),
    DaemonCommand(words: ["hosts", "reset-ek"], run: EKCommands.reset),
    DaemonCommand(words: ["users", "list"], run: PolicyCommands.users),
    DaemonCommand(words: ["users", "add"], run: PolicyCommands.addUsers),
    DaemonCommand(words: ["users", "remove"], run: PolicyCommands.removeUsers),
    DaemonCommand(words: ["admin", "create"], run: AdminCommands.create),
    DaemonCommand(words: ["admin", "reset"], run: AdminCommands.reset),
    DaemonCommand(words: ["admin", "remove"], run: AdminCommands.remove),
    DaemonCommand(words: ["admin", "list"], run: AdminCommands.list),
    DaemonCommand(words: ["grants", "new-key"], run: GrantCommands.newKey),
    DaemonCommand(words: ["grants", "list"], run: GrantCommands.list),
    DaemonCommand(words: ["grants", "withdraw"], run: GrantCommands.withdraw),
    DaemonCommand(words: ["hosts", "keys"], run: HostKeyCommands.list),
    DaemonCommand(words: ["hosts", "revoke-key"], run: HostKeyCommands.revoke),
]

/// Runs the command line and returns the exit status (0 ok, 1 failure, 2 usage). `--help`
/// or `-h` anywhere after a command prints that command's usage (after a group's first
/// word, the usage of the whole group); `help COMMAND` does the same.
func runCommandLine(_ arguments: [String], commands: [DaemonCommand]) -> Int32 {
    let args = Array(arguments.dropFirst())
    guard let first = args.first else {
        printError(
            "fingerauthd: a command is needed: init, serve, token, keys, policy, hosts, users, grants, admin, audit or doctor; "
                + "see 'fingerauthd --help'")
        return 2
    }
    if first == "--help" || first == "-h" || first == "help" {
        let asked = Array(args.dropFirst().prefix(2))
        print(asked.isEmpty ? Usage.text : Usage.of(asked) ?? Usage.text)
        return 0
    }
    let group = commands.filter { $0.words[0] == first }
    guard let command = group.first(where: { $0.words.count == 1 || args.dropFirst().first == $0.words[1] }) else {
        if group.isEmpty {
            printError("fingerauthd: \(UsageError.unknownCommand(first).adding("see 'fingerauthd --help'"))")
            return 2
        }
        if CommandArguments.asksForHelp(args.dropFirst()) {
            print(Usage.of([first]) ?? Usage.text)
            return 0
        }
        let subcommands = group.map { $0.words[1] }.joined(separator: ", ")
        let given =
            args.dropFirst().first.map { UsageError.unknownCommand(first + " " + $0).message }
            ?? "\(first) needs a command"
        printError("fingerauthd: \(given) (\(first): \(subcommands)); see 'fingerauthd \(first) --help'")
        return 2
    }
    let rest = args.dropFirst(command.words.count)
    if CommandArguments.asksForHelp(rest) {
        print(Usage.of(command.words) ?? Usage.text)
        return 0
    }
    do {
        return try command.run(rest)
    } catch {
        printError("fingerauthd: \(error.message)")
        return 2
    }
}

exit(runCommandLine(CommandLine.arguments, commands: commands))

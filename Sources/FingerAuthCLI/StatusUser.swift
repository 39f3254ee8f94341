import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// Whose fingerprint login `fingerauth status` checks as root: `--user`, else the user who
/// ran sudo (`SUDO_USER`), else it asks — root's own login is hardly ever what was meant,
/// and checking it reported `[FAIL] enrolled`, `[FAIL] key` and "blocked" for a host that
/// was fine.
enum StatusUser {
    /// What the first line says of how the user was chosen; nil for `--user`. Throws the
    /// question (exit status 2) when no user was named and sudo did not name one.
    static func choose(_ args: CommandArguments) throws(CommandError) -> String? {
        if args["user"] != nil { return nil }
        if let sudo = Context.sudoUser(), sudo != "root" {
            return "who ran sudo; --user NAME checks another"
        }
        throw CommandError(question(args), status: 2)
    }

    /// Which user, and the users that have FingerAuth state on this host to choose from.
    static func question(_ args: CommandArguments) -> String {
        var lines = [
            "status as root checks one user's fingerprint login: which one? fingerauth status --user NAME",
            "  (from that user's account, `sudo fingerauth status` checks them)",
        ]
        do {
            let options = try Context.loadOptions(args, requireURL: false)
            let directory = options.stateDirectory + "/users"
            let users = SafeFile.list(directory).filter { UserName.isValid($0) }
            lines.append(
                users.isEmpty
                    ? "  no user has FingerAuth state in \(directory) yet (fingerauth enroll --user NAME)"
                    : "  users with FingerAuth state here: " + users.joined(separator: ", "))
        } catch {
            lines.append("  and the " + error.message)
        }
        return lines.joined(separator: "\n")
    }
}

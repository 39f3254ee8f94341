#if canImport(Glibc)
import Glibc
#endif

/// Before an admin command opens a SQLite database as a user other than root: whether that
/// user can reach and use it. The service's directory (/var/lib/fingerauthd, mode 700)
/// hides the database from everyone else, and the command said "no such database".
enum DatabaseAccess {
    /// What keeps the calling user from `path`, with the command that works; nil when
    /// nothing does (or the database really is absent: the caller says so).
    static func problem(_ path: String) -> String? {
        let me = geteuid()
        guard me != 0 else { return nil }
        var st = stat()
        let found = lstat(path, &st) == 0
        let error = errno
        let blocker: (path: String, st: stat)
        if found {
            guard access(path, R_OK | W_OK) != 0 else { return nil }
            blocker = (path, st)
        } else {
            guard error == EACCES, let closed = closedDirectory(on: path) else { return nil }
            blocker = closed
        }
        let owner = DatabaseDirectory.userName(blocker.st.st_uid)
        let mode = String(UInt32(blocker.st.st_mode) & 0o7777, radix: 8)
        return "\(path) cannot be read by \(DatabaseDirectory.userName(me)): \(blocker.path) is \(owner)'s "
            + "(mode \(mode)). Run it as root: sudo fingerauthd \(commandWords()) (it then acts as the "
            + "database's owner)"
    }

    /// The first directory on the way to `path` that the caller may not search.
    static func closedDirectory(on path: String) -> (path: String, st: stat)? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/").dropLast() {
            prefix += "/" + part
            if access(prefix, X_OK) != 0 {
                var st = stat()
                guard stat(prefix, &st) == 0 else { return nil }
                return (prefix, st)
            }
        }
        return nil
    }

    /// The command's own words (`audit`, `keys list`) and "…" for its options: never their
    /// values, which may hold a database URL's password.
    static func commandWords() -> String {
        let words = CommandLine.arguments.dropFirst()
        let command = words.prefix { word in
            !word.isEmpty && word.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "-") }
                && !word.hasPrefix("-")
        }.prefix(2)
        return command.joined(separator: " ") + (words.count > command.count ? " …" : "")
    }
}

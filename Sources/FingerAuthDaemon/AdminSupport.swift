import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// What every admin command shares: the database path (`--db`, else `db` in the
/// configuration file, else the default), opening the store, times, tables.
enum Admin {
    /// Parses `arguments` for `command` with its own `valued` options plus `db` and `config`.
    static func options(
        _ arguments: ArraySlice<String>, valued: Set<String>, switches: Set<String> = [],
        command: String
    ) throws(UsageError) -> (Options, String) {
        let options = try Options(
            arguments, valued: valued.union(["db", "config"]), switches: switches, command: command)
        if let db = options.optional("db") { return (options, db) }
        let file = try ConfigFile.load(options.optional("config"), command: command)
        return (options, file["db"] ?? ServeSettings.defaultDatabase)
    }

    /// Opens the store, runs `body` with the current time, closes; store errors exit 1.
    /// Run as root on a database (or, before it exists, a directory) owned by another user
    /// (the service's), the command first takes that user's identity, so that the files
    /// SQLite creates (`-wal`, `-shm`, the database itself) stay the service's.
    static func withStore(
        _ path: String, mustExist: Bool,
        _ body: (any AuthStorage, Int64) throws(StoreError) -> Int32
    ) -> Int32 {
        let location = StoreLocation(path)
        if case .postgres = location {
            do {
                let store = try location.open(connections: 1)
                defer { store.close() }
                return try body(store, SystemClock().now())
            } catch {
                printError("fingerauthd: \(error)")
                return 1
            }
        }
        if let problem = DatabaseAccess.problem(path) {
            printError("fingerauthd: \(problem)")
            return 1
        }
        if mustExist && !SafeFile.exists(path) {
            printError("fingerauthd: \(path): no such database; check --db")
            return 1
        }
        umask(0o077)
        if let problem = actAsOwner(of: path) {
            printError("fingerauthd: \(problem)")
            return 1
        }
        do {
            let store: any AuthStorage = try SQLiteStore(path: path, readers: 1)
            defer { store.close() }
            return try body(store, SystemClock().now())
        } catch {
            printError("fingerauthd: \(error)")
            return 1
        }
    }

    /// Drops root for the owner of `path` (or of its directory when it does not exist yet)
    /// when that owner is not root: setgroups, setgid, setuid. Returns what went wrong.
    static func actAsOwner(of path: String) -> String? {
        guard geteuid() == 0 else { return nil }
        var st = stat()
        var target = path
        if lstat(path, &st) != 0 {
            let slash = path.lastIndex(of: "/")
            target = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
            guard stat(target, &st) == 0 else { return nil }
        }
        guard st.st_uid != 0 else { return nil }
        guard setgroups(0, nil) == 0, setgid(st.st_gid) == 0, setuid(st.st_uid) == 0, getuid() == st.st_uid else {
            return "\(target): cannot act as its owner (uid \(st.st_uid)): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// `2025-01-31T12:00:00Z` (gmtime_r + strftime).
    static func utcTime(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return String(seconds) }
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return n > 0 ? String(cString: buffer) : String(seconds)
    }

    /// Prints `rows` under `header` in aligned columns (two spaces apart); empty cells as `-`.
    /// Prints `rows` under `header` in aligned columns, each cell's control characters (line
    /// breaks too: a cell is one line) escaped (`TerminalText`).
    static func printTable(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows.map { $0.map { $0.isEmpty ? "-" : TerminalText.escaped($0) } }
        var widths = [Int](repeating: 0, count: header.count)
        for row in all {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        for row in all {
            let cells = row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: max(0, widths[i] - cell.count))
            }
            print(cells.joined(separator: "  "))
        }
    }

    /// Who runs the admin command, for the audit rows of policy changes: the login name of
    /// the real uid, and the sudo caller's name beside it when run through sudo.
    static func operatorName() -> String {
        let uid = getuid()
        var name = SystemUserDatabase().name(of: UInt32(uid)) ?? "uid \(uid)"
        if uid == 0, let raw = getenv("SUDO_USER") {
            let caller = LogText.clean(String(cString: raw))
            if !caller.isEmpty { name += " (sudo by \(caller))" }
        }
        return name
    }

    /// `event` from this machine (`local`) with `by ADMIN` as its reason, which the store
    /// completes with what changed.
    static func byAdmin(_ event: AuditEvent, _ admin: String) -> AuditEvent {
        var stamped = event
        stamped.peer = "local"
        stamped.reason = .detail("by " + admin)
        return stamped
    }
}

import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// Before `serve` opens a SQLite database: its directory must exist and belong to the user
/// serving it, and so must the database files already there. Otherwise SQLite says only
/// "unable to open database file" — or, run as root, makes a database that the service's
/// user cannot open later.
enum DatabaseDirectory {
    /// What is wrong, with the fix; nil when `serve` may open `database`. `config` is the
    /// `--config` given, for the command the message proposes.
    static func problem(database: String, config: String?) -> String? {
        guard case let .sqlite(path) = StoreLocation(database) else { return nil }
        let directory = directory(of: path)
        let me = geteuid()
        var st = stat()
        guard lstat(directory, &st) == 0 else {
            return "the database's directory \(directory) does not exist: `fingerauthd init` makes it, owned by the "
                + "service's user (under systemd, StateDirectory= in fingerauthd.service does)"
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            return "\(directory), the database's directory, is not a directory"
        }
        let serveCommand = "fingerauthd serve --config \(config ?? ConfigFile.defaultPath)"
        if st.st_uid != me {
            if me == 0 {
                return "\(directory) belongs to \(userName(st.st_uid)), but serve runs as root: a database made now "
                    + "would be root's, and the service could not open it. Run it as \(userName(st.st_uid)): "
                    + "runuser -u \(userName(st.st_uid)) -- \(serveCommand)"
            }
            if access(directory, W_OK | X_OK) != 0 {
                return
                    "\(directory) belongs to \(userName(st.st_uid)), and serve runs as \(userName(me)), who cannot write "
                    + "there: as root, `fingerauthd init --user \(userName(me))` gives it to \(userName(me)) (or run serve as its owner)"
            }
        }
        for file in InitFiles.databaseFiles(path) where lstat(file, &st) == 0 && st.st_uid != me {
            let fix =
                me == 0
                ? "run serve as \(userName(st.st_uid)): runuser -u \(userName(st.st_uid)) -- \(serveCommand)"
                : "as root, `fingerauthd init --user \(userName(me))` gives the database files to \(userName(me))"
            return "\(file) belongs to \(userName(st.st_uid)), not to \(userName(me)) who runs serve: \(fix)"
        }
        return nil
    }

    /// The directory part of `path` ("." for a bare name, "/" at the top).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// The login name of `uid`, else `uid N`.
    static func userName(_ uid: uid_t) -> String {
        SystemUserDatabase().name(of: UInt32(uid)) ?? "uid \(uid)"
    }
}

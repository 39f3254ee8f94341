import CSystem
import FingerAuthCore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The agent's listening socket: the one systemd passed (LISTEN_PID is ours, LISTEN_FDS 1,
/// descriptor 3 a listening stream socket), or one made at `path` — its directory created
/// (0755) when missing and required to be root-owned and not writable by group or others,
/// an old socket there replaced (never any other kind of file), the socket mode 0666 so
/// that every user's locker can connect (the agent checks who is calling).
enum AgentListener {
    struct Failure: Error {
        let message: String
    }

    /// The descriptor, and whether systemd (or systemd-socket-activate) passed it.
    static func open(path: String) -> Result<(fd: Int32, activated: Bool), Failure> {
        if let fd = activated() { return .success((fd, true)) }
        guard let slash = path.lastIndex(of: "/") else {
            return .failure(Failure(message: "\(path) is not an absolute path"))
        }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            return .failure(Failure(message: "cannot create \(directory): \(String(cString: strerror(errno)))"))
        }
        var st = stat()
        guard lstat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            return .failure(Failure(message: "\(directory) is not a directory"))
        }
        guard st.st_uid == 0, st.st_mode & 0o022 == 0 else {
            return .failure(Failure(message: "\(directory) must be owned by root and not writable by group or others"))
        }
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFSOCK else {
                return .failure(Failure(message: "\(path) exists and is not a socket; not replaced"))
            }
            unlink(path)
        }
        let fd = fa_unix_listen(path, 32)
        guard fd >= 0 else {
            return .failure(Failure(message: "cannot listen on \(path): \(String(cString: strerror(errno)))"))
        }
        guard chmod(path, 0o666) == 0 else {
            close(fd)
            return .failure(Failure(message: "cannot chmod \(path): \(String(cString: strerror(errno)))"))
        }
        return .success((fd, false))
    }

    /// systemd's socket (sd_listen_fds(3) without libsystemd): the variables are removed
    /// so that nothing started later believes them.
    private static func activated() -> Int32? {
        guard let pidText = getenv("LISTEN_PID"), let fdsText = getenv("LISTEN_FDS") else { return nil }
        let pid = Int32(String(cString: pidText))
        let count = Int(String(cString: fdsText))
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        guard pid == getpid(), count == 1, fa_is_listening_stream(3) != 0 else { return nil }
        _ = fcntl(3, F_SETFD, FD_CLOEXEC)
        return 3
    }
}

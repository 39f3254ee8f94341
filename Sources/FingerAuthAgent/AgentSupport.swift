import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

let agentVersion = "0.1.0"

/// The agent's log: one line per request through syslog(3) at LOG_AUTHPRIV (openlog in
/// main; `--stderr` copies each line to standard error). Names, codes and ids; never a key,
/// a token or a print.
struct AgentLog {
    let uid: uid_t
    let pid: pid_t
    let started: MonotonicInstant

    func write(_ priority: Int32, _ text: String) {
        let ms = MonotonicInstant.now().milliseconds - started.milliseconds
        fa_syslog(LOG_AUTHPRIV | priority, "uid=\(uid) pid=\(pid) \(text) ms=\(ms)")
    }

    /// The line for a login request's verdict: the full reason, and the category the client
    /// was sent. `user` is nil when it must not be shown; `clientService` is the service the
    /// client named (the token's `service` is `fingerauth-agent`).
    func outcome(_ outcome: LoginOutcome, user: String?, clientService: String) {
        var line = "client_service=\(clientService)"
        if let user { line += " user=\(user)" }
        line += " result=\(outcome.code) reason=\"\(outcome.reason)\" sent=\(outcome.category.rawValue)"
        if let finger = outcome.finger { line += " finger=\(finger)" }
        if let kid = outcome.kid { line += " kid=\(kid)" }
        if let jti = outcome.jti { line += " jti=\(jti)" }
        write(outcome.code == .success ? LOG_INFO : LOG_NOTICE, line)
    }
}

/// The reader's lock: an exclusive flock(2) on a root-owned file beside the socket, taken
/// without waiting, so that only one of the agent's clients scans at a time.
final class ReaderLock {
    private let fd: Int32

    init?(path: String) {
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == 0 else {
            close(fd)
            return nil
        }
    }

    func tryLock() -> Bool { flock(fd, LOCK_EX | LOCK_NB) == 0 }
    func unlock() { _ = flock(fd, LOCK_UN) }

    deinit { close(fd) }
}

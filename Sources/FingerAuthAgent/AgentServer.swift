import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The agent's accept loop. It has no thread: it polls the listening socket, forks one
/// process per client (`AgentSession`), reaps them, and keeps the uids' turns at the reader
/// (`ReaderTurns`) from their exit statuses. Failed attempts are counted by the sessions
/// themselves, in the same records as sudo and su (`AttemptLimit`). Connections beyond
/// `maxConnections` (or `maxPerUID` for one uid) are answered "busy" at once, without
/// reading anything, so a flood cannot hold the reader.
final class AgentServer {
    let listenFD: Int32
    let configPath: String
    let lockPath: String
    /// Each client's process: the caller's uid and pid.
    private var children: [pid_t: (uid: uid_t, pid: pid_t)] = [:]
    /// Who had the reader, who waits for it.
    private var turns = ReaderTurns()

    static let maxConnections = 16
    static let maxPerUID = 3

    init(listenFD: Int32, configPath: String, lockPath: String) {
        self.listenFD = listenFD
        self.configPath = configPath
        self.lockPath = lockPath
    }

    func run() -> Int32 {
        while true {
            reap()
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, children.isEmpty ? 1000 : 200)
            if ready < 0 {
                if errno == EINTR { continue }
                fa_syslog(
                    LOG_AUTHPRIV | LOG_ERR,
                    "poll on the listening socket failed: \(String(cString: strerror(errno))); exiting")
                return 1
            }
            guard ready > 0 else { continue }
            let fd = fa_accept(listenFD)
            guard fd >= 0 else { continue }
            var peerPID: pid_t = 0
            var peerUID: uid_t = 0
            guard fa_peer_credentials(fd, &peerPID, &peerUID) == 0 else {
                close(fd)
                continue
            }
            // A client that ended a moment ago must have its turn noted before this one is judged.
            reap()
            let client = SocketLines(fd: fd, maxLineBytes: AgentProtocol.maxRequestBytes, maxTotalBytes: 4096)
            let sameUID = children.values.filter { $0.uid == peerUID }.count
            guard children.count < AgentServer.maxConnections, sameUID < AgentServer.maxPerUID else {
                // Short and never waiting: the parent must stay free to accept.
                _ = client.send(
                    AgentReply.result(
                        AgentResult(code: .authInfoUnavailable, reason: OutcomeCategory.agentBusy.rawValue)
                    ).line,
                    withinMilliseconds: 50)
                AgentLog(uid: peerUID, pid: peerPID, started: MonotonicInstant.now())
                    .write(
                        LOG_NOTICE,
                        "refused: \(sameUID) connections of this uid, \(children.count) in all; reader not armed")
                continue
            }
            let yieldTurn = turns.mustYield(peerUID, running: sameUID > 0, now: MonotonicInstant.now().milliseconds)
            let child = fa_fork()
            if child == 0 {
                close(listenFD)
                // A backstop behind every deadline inside: the longest login the agent allows.
                alarm(UInt32(AgentProtocol.maxLoginMilliseconds / 1000 + 15))
                let status = AgentSession(
                    client: client, uid: peerUID, pid: peerPID, configPath: configPath,
                    lockPath: lockPath, yieldTurn: yieldTurn
                ).run()
                client.close()
                _exit(status)
            }
            if child < 0 {
                fa_syslog(
                    LOG_AUTHPRIV | LOG_ERR,
                    "fork failed: \(String(cString: strerror(errno))); client uid=\(peerUID) closed")
            } else {
                children[child] = (peerUID, peerPID)
            }
            client.close()
        }
    }

    /// Reaps ended clients: one told "busy" waits for the reader, one that held it (or died
    /// by a signal, which only a request holding it can) had its turn.
    private func reap() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return }
            guard let (uid, caller) = children.removeValue(forKey: pid) else { continue }
            let exited = status & 0x7f == 0
            let code = (status >> 8) & 0xff
            let now = MonotonicInstant.now().milliseconds
            if exited && code == AgentSession.Exit.busy {
                turns.toldBusy(uid, at: now)
            } else if !exited || code == AgentSession.Exit.heldReader {
                turns.heldEnded(uid, at: now)
            }
            if !exited && status & 0x7f == SIGIO {
                // The client went away during its login (AgentSession's SIGIO): the request's
                // one log line is written here; its failed attempt was counted before the prompt.
                AgentLog(uid: uid, pid: caller, started: MonotonicInstant.now())
                    .write(LOG_NOTICE, "the client went away during the login; scan stopped, reader free")
            }
        }
    }
}

import CSystem
import FingerAuthCore
import FingerAuthSystem
#if canImport(Glibc)
import Glibc
#endif

/// The agent's accept loop. It has no thread: it polls the listening socket, forks one
/// process per client (`AgentSession`), reaps them, and counts failed logins per uid from
/// their exit statuses. Connections beyond `maxConnections` (or `maxPerUID` for one uid) are
/// answered "busy" at once, without reading anything, so a flood cannot hold the reader.
final class AgentServer {
    let listenFD: Int32
    let configPath: String
    let lockPath: String
    /// Each client's process: the caller's uid and pid.
    private var children: [pid_t: (uid: uid_t, pid: pid_t)] = [:]
    /// Monotonic milliseconds of each uid's failed logins within the window.
    private var failures: [uid_t: [Int64]] = [:]

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
                fa_syslog(LOG_AUTHPRIV | LOG_ERR, "poll on the listening socket failed: \(String(cString: strerror(errno))); exiting")
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
            // A client that ended a moment ago must count before this one is judged.
            reap()
            let client = SocketLines(fd: fd, maxLineBytes: AgentProtocol.maxRequestBytes, maxTotalBytes: 4096)
            let sameUID = children.values.filter { $0.uid == peerUID }.count
            guard children.count < AgentServer.maxConnections, sameUID < AgentServer.maxPerUID else {
                // Short and never waiting: the parent must stay free to accept.
                _ = client.send(AgentReply.result(AgentResult(code: .authInfoUnavailable, reason: "agent busy: too many connections")).line,
                                withinMilliseconds: 50)
                AgentLog(uid: peerUID, pid: peerPID, started: MonotonicInstant.now())
                    .write(LOG_NOTICE, "refused: \(sameUID) connections of this uid, \(children.count) in all; reader not armed")
                continue
            }
            let recent = recentFailures(peerUID)
            let child = fa_fork()
            if child == 0 {
                close(listenFD)
                // A backstop behind every deadline inside: the longest login the agent allows.
                alarm(UInt32(AgentProtocol.maxLoginMilliseconds / 1000 + 15))
                let status = AgentSession(client: client, uid: peerUID, pid: peerPID, configPath: configPath,
                                          lockPath: lockPath, recentFailures: recent).run()
                client.close()
                _exit(status)
            }
            if child < 0 {
                fa_syslog(LOG_AUTHPRIV | LOG_ERR, "fork failed: \(String(cString: strerror(errno))); client uid=\(peerUID) closed")
            } else {
                children[child] = (peerUID, peerPID)
            }
            client.close()
        }
    }

    /// Reaps ended clients; a failed login (exit 10) counts against its uid, a success
    /// clears the uid's count.
    private func reap() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return }
            guard let (uid, caller) = children.removeValue(forKey: pid) else { continue }
            let exited = status & 0x7f == 0
            let code = (status >> 8) & 0xff
            if !exited && status & 0x7f == SIGIO {
                // The client went away during its login (AgentSession's SIGIO): the request's
                // one log line is written here.
                AgentLog(uid: uid, pid: caller, started: MonotonicInstant.now())
                    .write(LOG_NOTICE, "the client went away during the login; scan stopped, reader free")
                continue
            }
            if exited && code == AgentSession.Exit.counted {
                failures[uid, default: []].append(MonotonicInstant.now().milliseconds)
            } else if exited && code == AgentSession.Exit.success {
                failures[uid] = nil
            }
        }
    }

    private func recentFailures(_ uid: uid_t) -> Int {
        let since = MonotonicInstant.now().milliseconds - Int64(AgentSession.failureWindowSeconds) * 1000
        let kept = (failures[uid] ?? []).filter { $0 > since }
        failures[uid] = kept.isEmpty ? nil : kept
        return kept.count
    }
}

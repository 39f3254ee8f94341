import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// A connected, non-blocking Unix stream socket read and written as `\n`-terminated lines,
/// every read and write under a deadline (`poll`), lines and the total bounded. Owns the
/// descriptor and closes it in deinit. Used by the module and the CLI to talk to
/// `fingerauth-agent`, and by the agent for each of its clients.
package final class SocketLines: AgentChannel {
    private var fd: Int32
    private var lines: BoundedLineReader
    package let maxLineBytes: Int
    package let maxTotalBytes: Int

    /// Takes ownership of `fd`, which must be non-blocking.
    package init(fd: Int32, maxLineBytes: Int, maxTotalBytes: Int) {
        self.fd = fd
        self.maxLineBytes = maxLineBytes
        self.maxTotalBytes = maxTotalBytes
        lines = BoundedLineReader(maxLineBytes: maxLineBytes, maxTotalBytes: maxTotalBytes, chunkBytes: 1024)
    }

    /// Connects to the Unix socket at `path` (`fa_unix_connect`: socket, connect; libc only).
    package static func connect(
        _ path: String, maxLineBytes: Int = AgentProtocol.maxLineBytes,
        maxTotalBytes: Int = AgentProtocol.maxTotalBytes
    ) -> Result<SocketLines, AgentUnreachable> {
        let fd = fa_unix_connect(path)
        guard fd >= 0 else { return .failure(AgentUnreachable(String(cString: strerror(fa_errno())))) }
        return .success(SocketLines(fd: fd, maxLineBytes: maxLineBytes, maxTotalBytes: maxTotalBytes))
    }

    /// Writes `line` and a newline, waiting for room at most `ms` milliseconds.
    package func send(_ line: String, withinMilliseconds ms: Int64) -> Bool {
        send(line, until: MonotonicInstant.now().adding(milliseconds: ms))
    }

    /// Writes `line` and a newline, waiting for room at most until `deadline`.
    package func send(_ line: String, until deadline: MonotonicInstant) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            guard fd >= 0 else { return false }
            let n = bytes.withUnsafeBytes { fa_send(fd, $0.baseAddress.map { $0 + sent }, bytes.count - sent) }
            if n > 0 {
                sent += n
                continue
            }
            if n < 0 && fa_errno() == EINTR { continue }
            guard n < 0 && (fa_errno() == EAGAIN || fa_errno() == EWOULDBLOCK) else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = fa_poll(&pfd, 1, deadline.remaining)
            if ready < 0 && fa_errno() == EINTR { continue }
            guard ready > 0 else { return false }
        }
        return true
    }

    /// The next line, waiting at most `ms` milliseconds (see `readLine(until:)`).
    package func readLine(withinMilliseconds ms: Int64) -> AgentRead {
        readLine(until: MonotonicInstant.now().adding(milliseconds: ms))
    }

    /// The next line without its newline, waiting at most until `deadline`. A line longer
    /// than `maxLineBytes` or more than `maxTotalBytes` in all is `.garbage`; bytes after
    /// the last newline at the end of the stream are `.garbage` too.
    package func readLine(until deadline: MonotonicInstant) -> AgentRead {
        switch lines.next(from: fd, until: deadline) {
        case let .line(text): return .line(text)
        case .timedOut: return .timedOut
        case .garbage, .endedMidLine: return .garbage
        case .ended, .pollFailed, .readFailed: return .closed
        }
    }

    /// True once the peer has closed or reset its end (poll reports a hang-up), without reading.
    package var peerGone: Bool {
        guard fd >= 0 else { return true }
        var pfd = pollfd(fd: fd, events: Int16(POLLRDHUP_VALUE), revents: 0)
        guard fa_poll(&pfd, 1, 0) > 0 else { return false }
        return pfd.revents & Int16(POLLHUP | POLLERR) != 0 || pfd.revents & Int16(POLLRDHUP_VALUE) != 0
    }

    /// SIGIO to this process when the peer sends more or hangs up (`fa_signal_on_hangup`);
    /// false when it could not be set.
    @discardableResult
    package func signalOnHangup(_ on: Bool) -> Bool { fd >= 0 && fa_signal_on_hangup(fd, on ? 1 : 0) == 0 }

    /// The uid of the process at the other end (SO_PEERCRED), nil when unknown.
    package func peerUID() -> uid_t? {
        var pid: pid_t = 0
        var uid: uid_t = 0
        guard fd >= 0, fa_peer_credentials(fd, &pid, &uid) == 0 else { return nil }
        return uid
    }

    /// Closes the descriptor now (deinit does it otherwise).
    package func close() {
        if fd >= 0 { fa_close(fd) }
        fd = -1
    }

    deinit { close() }
}

/// POLLRDHUP (0x2000) is hidden without _GNU_SOURCE.
let POLLRDHUP_VALUE: Int32 = 0x2000

/// The module's way to the agent: a Unix socket connect, nothing else of the network. The
/// process listening there must be root (its credentials, SO_PEERCRED, recorded by the
/// kernel when it called listen): a socket served by anyone else — `agent_socket` pointed
/// into a folder a user can write, say — is not the agent, and its "yes" is not believed.
package struct AgentSocketConnector: AgentConnector {
    package init() {}
    /// Connects to `path` and checks that root serves it.
    package func connect(_ path: String) -> Result<SocketLines, AgentUnreachable> {
        switch SocketLines.connect(path) {
        case let .failure(why): return .failure(why)
        case let .success(channel):
            guard let uid = channel.peerUID() else {
                return .failure(AgentUnreachable("the peer's credentials cannot be read"))
            }
            guard uid == 0 else { return .failure(AgentUnreachable("the socket is served by uid \(uid), not root")) }
            return .success(channel)
        }
    }
}

/// CLOCK_MONOTONIC in milliseconds, for `AgentLoginFlow`.
package struct SystemMonotonicTime: MonotonicTime {
    package init() {}
    /// CLOCK_MONOTONIC now, in milliseconds.
    package func nowMilliseconds() -> Int64 { MonotonicInstant.now().milliseconds }
}

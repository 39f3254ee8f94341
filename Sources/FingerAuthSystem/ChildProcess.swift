import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// How a child ended.
public enum ChildExit: Equatable, Sendable {
    case exited(Int32)
    case signaled(Int32)
    /// Still running when the deadline passed (it has been killed), or could not be reaped.
    case unknown
}

/// One line from a child, or why there is none.
public enum ChildLine: Equatable, Sendable {
    case line(String)
    case endOfOutput
    case timedOut
    /// A line longer than the limit, or more output than the total limit.
    case garbage
}

public struct SpawnError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "cannot run \(path): \(String(cString: strerror(errno)))" }
}

/// A helper process started with posix_spawn: clean environment, standard input from
/// /dev/null, standard output to a pipe the parent reads, standard error discarded, every
/// other descriptor closed, default signal dispositions, an empty signal mask and a process
/// group of its own. This
/// object owns the pipe and the process: it kills and reaps it at the latest in deinit.
public final class ChildProcess {
    public let pid: pid_t
    private var readEnd: Int32
    private var buffer: [UInt8] = []
    private var totalRead = 0
    private var reaped: ChildExit?

    /// Largest line and total output accepted from the child.
    public let maxLineBytes: Int
    public let maxTotalBytes: Int

    private init(pid: pid_t, readEnd: Int32, maxLineBytes: Int, maxTotalBytes: Int) {
        self.pid = pid
        self.readEnd = readEnd
        self.maxLineBytes = maxLineBytes
        self.maxTotalBytes = maxTotalBytes
    }

    public static func spawn(path: String, arguments: [String], environment: [String],
                             maxLineBytes: Int = 256, maxTotalBytes: Int = 16 * 1024) throws(SpawnError) -> ChildProcess {
        var fds: [Int32] = [-1, -1]
        guard fa_pipe2(&fds, O_CLOEXEC) == 0 else { throw SpawnError(path: path, errno: errno) }
        let readEnd = fds[0], writeEnd = fds[1]

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        fa_spawn_closefrom(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        // Its own process group, so that a kill at the deadline reaches anything it started.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let argv = CStringArray([path] + arguments)
        let envp = CStringArray(environment)
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv.pointers, envp.pointers)
        close(writeEnd)
        guard rc == 0 else {
            close(readEnd)
            throw SpawnError(path: path, errno: rc)
        }
        return ChildProcess(pid: pid, readEnd: readEnd, maxLineBytes: maxLineBytes, maxTotalBytes: maxTotalBytes)
    }

    /// The next line of output (without its newline), waiting at most until `deadline`.
    public func readLine(until deadline: MonotonicInstant) -> ChildLine {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                guard line.count <= maxLineBytes else { return .garbage }
                return .line(String(decoding: line, as: UTF8.self))
            }
            guard buffer.count <= maxLineBytes else { return .garbage }
            guard readEnd >= 0 else { return .endOfOutput }
            var pfd = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&pfd, 1, deadline.remaining)
            if ready < 0 {
                if errno == EINTR { continue }
                return .endOfOutput
            }
            if ready == 0 { return .timedOut }
            var chunk = [UInt8](repeating: 0, count: 512)
            let n = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                closePipe()
                return .endOfOutput
            }
            if n == 0 {
                closePipe()
                return buffer.isEmpty ? .endOfOutput : .garbage
            }
            totalRead += n
            guard totalRead <= maxTotalBytes else { return .garbage }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Waits for the child to end until `deadline`, then kills it (SIGKILL) and reaps it.
    /// Never blocks beyond the deadline plus a short grace for the kill.
    @discardableResult
    public func finish(until deadline: MonotonicInstant) -> ChildExit {
        if let reaped { return reaped }
        if let status = poll(until: deadline) { return status }
        killGroup()
        let status = poll(until: MonotonicInstant.now().adding(milliseconds: 2000)) ?? .unknown
        reaped = status
        return status
    }

    /// Kills the child now and reaps it.
    @discardableResult
    public func kill() -> ChildExit {
        if let reaped { return reaped }
        killGroup()
        return finish(until: MonotonicInstant.now())
    }

    /// SIGKILL to the child's process group and to the child itself.
    private func killGroup() {
        Glibc.kill(-pid, SIGKILL)
        Glibc.kill(pid, SIGKILL)
    }

    private func poll(until deadline: MonotonicInstant) -> ChildExit? {
        while true {
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid {
                let exit: ChildExit
                if status & 0x7f == 0 {
                    exit = .exited((status >> 8) & 0xff)
                } else {
                    exit = .signaled(status & 0x7f)
                }
                reaped = exit
                return exit
            }
            if r < 0 && errno != EINTR {
                // ECHILD: the host reaps children itself (SIGCHLD ignored); it is gone.
                reaped = .unknown
                return .unknown
            }
            if MonotonicInstant.now() >= deadline { return nil }
            usleep(2000)
        }
    }

    private func closePipe() {
        if readEnd >= 0 { close(readEnd) }
        readEnd = -1
    }

    deinit {
        closePipe()
        if reaped == nil { kill() }
    }
}

/// A NULL-terminated `char *[]` whose strings live as long as this object.
private final class CStringArray {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointers = .allocate(capacity: strings.count + 1)
        for (i, s) in strings.enumerated() { pointers[i] = strdup(s) }
        pointers[strings.count] = nil
    }

    deinit {
        for i in 0..<count { free(pointers[i]) }
        pointers.deallocate()
    }
}

import CSpawn
import CSystem

/// How a child ended.
package enum ChildExit: Equatable, Sendable {
    case exited(Int32)
    case signaled(Int32)
    /// Still running when the deadline passed (it has been killed), or could not be reaped.
    case unknown
}

/// One line from a child, or why there is none.
package enum ChildLine: Equatable, Sendable {
    case line(String)
    case endOfOutput
    case timedOut
    /// A line longer than the limit, or more output than the total limit.
    case garbage
}

/// The login helper as a child process: started by `fa_spawn_helper` (clone as vfork, then
/// setsid, root as every uid, PR_SET_PDEATHSIG, an empty environment, only its pipes open,
/// `execveat` of a checked descriptor), its request already waiting on its standard input,
/// its standard output on a pipe the parent reads, standard error discarded. This object
/// owns the pipe and the process: it kills the process group and reaps it at the latest in
/// deinit.
package final class ChildProcess {
    package let pid: pid_t
    private var readEnd: Int32
    /// Both ends of the child's standard input, when the spawn kept it (`keepInput`).
    private var input: (readEnd: Int32, writeEnd: Int32) = (-1, -1)
    /// `pidfd_open` of the child: readable once it has ended (-1 when the kernel has none).
    private var pidFD: Int32
    private var lines: BoundedLineReader
    private var reaped: ChildExit?

    /// Largest line and total output accepted from the child.
    package let maxLineBytes: Int
    package let maxTotalBytes: Int

    private init(pid: pid_t, readEnd: Int32, maxLineBytes: Int, maxTotalBytes: Int) {
        self.pid = pid
        self.readEnd = readEnd
        // Opened before the child is reaped, so the pid cannot have been reused yet; a
        // pidfd is close-on-exec from the start.
        self.pidFD = fa_pidfd_open(pid)
        self.maxLineBytes = maxLineBytes
        self.maxTotalBytes = maxTotalBytes
        lines = BoundedLineReader(maxLineBytes: maxLineBytes, maxTotalBytes: maxTotalBytes, chunkBytes: 512)
    }

    /// Largest `input`: it is written into the pipe before the child starts, and a pipe
    /// holds 64 KiB, so the write never waits.
    package static let maxInputBytes = 32 * 1024

    /// Starts `executable` with `arguments` (argv[0] first) and `input` on its standard input.
    /// With `keepInput` the standard input stays open after `input`, for `writeLine`.
    package static func spawn(
        _ executable: TrustedExecutable, arguments: [String], input: [UInt8],
        maxLineBytes: Int = 256, maxTotalBytes: Int = 16 * 1024, keepInput: Bool = false
    ) -> Result<ChildProcess, SpawnFailure> {
        guard input.count <= maxInputBytes else {
            return .failure(SpawnFailure("request larger than \(maxInputBytes) bytes"))
        }
        var stdinPipe: [Int32] = [-1, -1]
        guard fa_pipe2(&stdinPipe, O_CLOEXEC | O_NONBLOCK) == 0 else { return .failure(failure("pipe")) }
        // With `keepInput` this process keeps a read end too, so that a write after the child
        // is gone fills the pipe instead of raising SIGPIPE in the host.
        defer { if !keepInput { close(stdinPipe[0]) } }
        var written = 0
        while written < input.count {
            let n = input.withUnsafeBytes {
                write(stdinPipe[1], $0.baseAddress.map { $0 + written }, input.count - written)
            }
            if n < 0 && fa_errno() == EINTR { continue }
            guard n > 0 else {
                let why = failure("writing the request")
                close(stdinPipe[1])
                if keepInput { close(stdinPipe[0]) }
                return .failure(why)
            }
            written += n
        }
        if !keepInput { close(stdinPipe[1]) }
        // The child reads its request with ordinary blocking reads.
        _ = fa_fcntl_setfl(stdinPipe[0], 0)

        var stdoutPipe: [Int32] = [-1, -1]
        guard fa_pipe2(&stdoutPipe, O_CLOEXEC) == 0 else { return .failure(failure("pipe")) }
        let argv = CStringArray(arguments)
        let pid = fa_spawn_helper(executable.descriptor, argv.pointers, stdinPipe[0], stdoutPipe[1])
        let spawnErrno = fa_errno()
        close(stdoutPipe[1])
        guard pid > 0 else {
            close(stdoutPipe[0])
            if keepInput {
                close(stdinPipe[0])
                close(stdinPipe[1])
            }
            return .failure(
                SpawnFailure("cannot start \(executable.path): clone: \(String(cString: strerror(spawnErrno)))"))
        }
        let child = ChildProcess(
            pid: pid, readEnd: stdoutPipe[0], maxLineBytes: maxLineBytes, maxTotalBytes: maxTotalBytes)
        if keepInput { child.input = (stdinPipe[0], stdinPipe[1]) }
        return .success(child)
    }

    /// Writes `line` and a newline to the child's kept standard input without waiting: false
    /// when the input was not kept or the pipe is full (a child that reads nothing while it
    /// is answered, or has ended, is not waited for).
    package func writeLine(_ line: String) -> Bool {
        let writeEnd = input.writeEnd
        guard writeEnd >= 0 else { return false }
        let bytes = Array((line + "\n").utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes {
                write(writeEnd, $0.baseAddress.map { $0 + written }, bytes.count - written)
            }
            if n < 0 && fa_errno() == EINTR { continue }
            guard n > 0 else { return false }
            written += n
        }
        return true
    }

    private static func failure(_ what: String) -> SpawnFailure {
        SpawnFailure("\(what): \(String(cString: strerror(fa_errno())))")
    }

    /// The next line of output (without its newline), waiting at most until `deadline`.
    package func readLine(until deadline: MonotonicInstant) -> ChildLine {
        switch lines.next(from: readEnd, until: deadline) {
        case let .line(text): return .line(text)
        case .timedOut: return .timedOut
        case .pollFailed: return .endOfOutput
        case .garbage: return .garbage
        case .endedMidLine:
            closePipe()
            return .garbage
        case .ended, .readFailed:
            closePipe()
            return .endOfOutput
        }
    }

    /// Waits for the child to end until `deadline`, then kills it (SIGKILL) and reaps it.
    /// Never blocks beyond the deadline plus a short grace for the kill.
    @discardableResult
    package func finish(until deadline: MonotonicInstant) -> ChildExit {
        if let reaped { return reaped }
        if let status = poll(until: deadline) { return status }
        killGroup()
        let status = poll(until: MonotonicInstant.now().adding(milliseconds: 2000)) ?? .unknown
        reaped = status
        return status
    }

    /// Sends `signal` to the child itself (not its group) while it is not reaped: a request
    /// to end on its own (SIGTERM), which it may answer first.
    package func signal(_ signal: Int32) {
        guard reaped == nil else { return }
        if pidFD >= 0 {
            _ = fa_pidfd_send_signal(pidFD, signal)
        } else if fa_child_not_reaped(pid) != 0 {
            fa_kill(pid, signal)
        }
    }

    /// Kills the child now and reaps it.
    @discardableResult
    package func kill() -> ChildExit {
        if let reaped { return reaped }
        killGroup()
        return finish(until: MonotonicInstant.now())
    }

    /// SIGKILL to the child's process group and to the child itself — only while the
    /// child is known not yet reaped. A host that reaps its own children (SIGCHLD ignored,
    /// a thread in waitpid(-1)) may have reaped it already, and then its pid, which is
    /// also its group's id, may belong to another process: that one must not be killed.
    /// Until it is reaped, the child (alive or a zombie) holds its pid and its group id.
    /// The leader itself is signalled through the pidfd, which names only this child.
    private func killGroup() {
        if pidFD >= 0 {
            guard fa_pidfd_send_signal(pidFD, 0) == 0 else { return } // ESRCH: reaped by the host
            fa_kill(-pid, SIGKILL)
            _ = fa_pidfd_send_signal(pidFD, SIGKILL)
        } else {
            // No pidfd (a kernel before 5.3, or the child was gone before it was opened).
            guard fa_child_not_reaped(pid) == 0 else { return }
            fa_kill(-pid, SIGKILL)
            fa_kill(pid, SIGKILL)
        }
    }

    private func poll(until deadline: MonotonicInstant) -> ChildExit? {
        while true {
            var status: Int32 = 0
            let r = reap(&status)
            if r == 1 {
                let exit: ChildExit = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
                reaped = exit
                return exit
            }
            if r < 0 && fa_errno() != EINTR {
                // ECHILD: the host reaps children itself (SIGCHLD ignored); it is gone.
                reaped = .unknown
                return .unknown
            }
            if MonotonicInstant.now() >= deadline { return nil }
            if pidFD >= 0 {
                // Woken the moment the child ends, not at the next tick of a sleep loop.
                var pfd = pollfd(fd: pidFD, events: Int16(POLLIN), revents: 0)
                _ = fa_poll(&pfd, 1, max(1, deadline.remaining))
            } else {
                usleep(2000)
            }
        }
    }

    /// 1 when the child was reaped now (`status` as waitpid gives it), 0 while it runs, -1
    /// with fa_errno(). Through the pidfd when there is one: waitpid(pid) could reap another
    /// child of the host that was given this pid after the host reaped ours.
    private func reap(_ status: inout Int32) -> Int32 {
        if pidFD >= 0 {
            let r = fa_reap_pidfd(pidFD, &status)
            if !(r < 0 && fa_errno() == EINVAL) { return r } // EINVAL: a kernel before 5.4 (no P_PIDFD)
        }
        let w = waitpid(pid, &status, WNOHANG)
        return w == pid ? 1 : (w == 0 ? 0 : -1)
    }

    private func closePipe() {
        if readEnd >= 0 { close(readEnd) }
        readEnd = -1
    }

    /// Closes the kept standard input: the child reads the end of its input.
    package func closeInput() {
        if input.writeEnd >= 0 { close(input.writeEnd) }
        if input.readEnd >= 0 { close(input.readEnd) }
        input = (-1, -1)
    }

    deinit {
        closePipe()
        closeInput()
        if reaped == nil { kill() }
        if pidFD >= 0 { close(pidFD) }
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

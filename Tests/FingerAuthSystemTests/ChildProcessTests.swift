import FingerAuthSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The helper's process in a host that reaps its own children: with SIGCHLD ignored the
/// kernel reaps the child the moment it ends, its pid is free, and the next process to get
/// that pid must not be killed when the module gives up on the child.
final class ChildProcessTests: XCTestCase {
    override func tearDown() {
        signal(SIGCHLD, SIG_DFL)
    }

    func testKillingAChildTheHostAlreadyReapedSignalsNobodyWhoTookItsPid() throws {
        signal(SIGCHLD, SIG_IGN) // the host reaps: every child is reaped by the kernel at once
        guard case let .success(sleep) = TrustedExecutable.open("/usr/bin/sleep") else {
            return XCTFail("/usr/bin/sleep")
        }
        guard case let .success(child) = ChildProcess.spawn(sleep, arguments: ["sleep", "0.3"], input: []) else {
            return XCTFail("spawn")
        }
        let pid = child.pid
        XCTAssertTrue(waitUntilGone(pid), "the child did not end")

        // A new process with the child's pid, leading a session and a group of its own (as
        // the helper did): what a pid reused after the reaping looks like.
        guard let victim = spawnWithPid(pid, ["/usr/bin/setsid", "/usr/bin/sleep", "30"]) else {
            throw XCTSkip("could not give a new process pid \(pid) (ns_last_pid not writable or too busy)")
        }
        defer { Glibc.kill(victim, SIGKILL) }
        XCTAssertTrue(waitUntil { self.processGroup(victim) == victim }, "the stand-in did not lead its group")

        XCTAssertEqual(child.kill(), .unknown)
        usleep(100_000)
        XCTAssertEqual(Glibc.kill(victim, 0), 0, "the process that took the reaped child's pid was killed")
        XCTAssertEqual(processGroup(victim), victim)
    }

    func testAChildStillRunningIsKilledWithItsGroup() {
        guard case let .success(sleep) = TrustedExecutable.open("/usr/bin/sleep") else {
            return XCTFail("/usr/bin/sleep")
        }
        guard case let .success(child) = ChildProcess.spawn(sleep, arguments: ["sleep", "30"], input: []) else {
            return XCTFail("spawn")
        }
        XCTAssertEqual(child.kill(), .signaled(SIGKILL))
        XCTAssertNotEqual(Glibc.kill(child.pid, 0), 0)
    }

    // MARK: - helpers

    private func waitUntil(_ check: () -> Bool) -> Bool {
        for _ in 0..<200 {
            if check() { return true }
            usleep(10_000)
        }
        return check()
    }

    private func waitUntilGone(_ pid: pid_t) -> Bool {
        waitUntil { Glibc.kill(pid, 0) != 0 && errno == ESRCH }
    }

    /// Field 5 of /proc/<pid>/stat.
    private func processGroup(_ pid: pid_t) -> pid_t? {
        guard let file = fopen("/proc/\(pid)/stat", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 1024)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 2 ? pid_t(fields[2]) : nil
    }

    /// Starts `argv` so that it gets `pid` (the kernel hands out ns_last_pid + 1 next);
    /// retries while other processes of the machine take the number first.
    private func spawnWithPid(_ pid: pid_t, _ argv: [String]) -> pid_t? {
        for _ in 0..<50 {
            guard let file = fopen("/proc/sys/kernel/ns_last_pid", "w") else { return nil }
            fputs("\(pid - 1)", file)
            guard fclose(file) == 0 else { return nil }
            var spawned: pid_t = 0
            var cArgs = argv.map { strdup($0) } + [nil]
            defer { for arg in cArgs { free(arg) } }
            guard posix_spawn(&spawned, argv[0], nil, nil, &cArgs, environ) == 0 else { return nil }
            if spawned == pid { return spawned }
            Glibc.kill(spawned, SIGKILL)
        }
        return nil
    }
}

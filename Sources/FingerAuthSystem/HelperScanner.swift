#if canImport(Glibc)
import Glibc
#endif
import FingerAuthCore

/// The biometric step as the module runs it: `fingerauth-scan` in its own process
/// (GLib and libfprint never run inside sudo or sshd), its lines relayed as they come,
/// killed at the deadline. Only a `MATCH` line followed by exit status 0 is a match.
public struct HelperScanner: FingerprintScanner {
    /// Extra time over `timeout` for the helper to start and open the reader.
    public var startupGraceMilliseconds: Int64 = 2000

    public init() {}

    /// The helper's environment: nothing of the caller's (inside sudo it is the user's).
    public static let environment = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"]

    public static func arguments(user: String, options: Options) -> [String] {
        var args = ["--user", user, "--state-dir", options.stateDirectory,
                    "--max-tries", String(options.maxTries), "--timeout", String(options.timeoutSeconds)]
        if let reader = options.virtualReader { args += ["--virtual-reader", reader] }
        return args
    }

    public func scan(user: String, options: Options, relay: (ScanMessage) -> Bool) -> ScanOutcome {
        if let problem = HelperScanner.checkExecutable(options.scanHelper) { return .unavailable(problem) }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(path: options.scanHelper,
                                           arguments: HelperScanner.arguments(user: user, options: options),
                                           environment: HelperScanner.environment,
                                           maxLineBytes: ScanMessage.maxLineBytes)
        } catch {
            return .unavailable(error.description)
        }
        let timeoutMs = Int64(options.timeoutSeconds) * 1000
        let deadline = MonotonicInstant.now().adding(milliseconds: timeoutMs + startupGraceMilliseconds)
        let exitGrace: Int64 = 1000
        while true {
            switch child.readLine(until: deadline) {
            case let .line(text):
                guard let message = ScanMessage(line: text) else {
                    child.kill()
                    return .unavailable("scan helper sent an unreadable line")
                }
                switch message {
                case .ready, .retry:
                    guard relay(message) else { child.kill(); return .conversationFailed }
                case let .noMatch(left):
                    guard relay(message) else { child.kill(); return .conversationFailed }
                    if left == 0 {
                        child.finish(until: MonotonicInstant.now().adding(milliseconds: exitGrace))
                        return .tooManyTries
                    }
                case let .match(finger):
                    _ = relay(message)
                    let exit = child.finish(until: MonotonicInstant.now().adding(milliseconds: exitGrace))
                    guard exit == .exited(0) else { return .unavailable("scan helper reported a match but ended with \(exit)") }
                    return .matched(finger: finger)
                case let .fail(reason, detail):
                    _ = relay(message)
                    child.finish(until: MonotonicInstant.now().adding(milliseconds: exitGrace))
                    return .unavailable("reader: \(reason.rawValue)" + (detail.isEmpty ? "" : ": " + detail))
                }
            case .endOfOutput:
                let exit = child.finish(until: MonotonicInstant.now().adding(milliseconds: exitGrace))
                return .unavailable("scan helper ended without an answer (\(HelperScanner.describe(exit)))")
            case .timedOut:
                child.kill()
                return .unavailable("no finger within \(options.timeoutSeconds) s; scan helper stopped")
            case .garbage:
                child.kill()
                return .unavailable("scan helper sent too much or malformed output")
            }
        }
    }

    /// Nil when `path` is a regular, executable file owned by root and not writable by
    /// group or others; else the reason.
    public static func checkExecutable(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return "scan helper \(path): \(String(cString: strerror(errno)))" }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return "scan helper \(path): not a regular file" }
        guard st.st_uid == 0 else { return "scan helper \(path): not owned by root" }
        guard st.st_mode & 0o022 == 0 else { return "scan helper \(path): writable by group or others" }
        guard st.st_mode & 0o100 != 0 else { return "scan helper \(path): not executable" }
        return nil
    }

    static func describe(_ exit: ChildExit) -> String {
        switch exit {
        case let .exited(code): return "exit status \(code)"
        case let .signaled(signal): return "killed by signal \(signal)"
        case .unknown: return "status unknown"
        }
    }
}

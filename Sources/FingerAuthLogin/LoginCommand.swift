import FingerAuthCore
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth-login --login`: reads the request (standard input), reads the user's prints
/// (checked in forked children, before any thread starts), then runs `HelperLoginFlow` over
/// the real parts (`HelperAdapters.swift`): the flow decides every line and the exit status.
enum LoginCommand {
    typealias ExitCode = HelperExit.Code

    static func run() -> ExitCode {
        guard let job = RequestInput.job() else { return .usage }
        if let origin = job.approval { return RemoteApproval.run(job, origin: origin) }
        return login(job)
    }

    /// `prompt = parallel`: the module is blocked in the conversation and cannot kill this
    /// process at its deadline, so the helper bounds itself: SIGALRM (default action: the
    /// process ends) after every phase's bound — 5 s to READY, the finger's `timeout`,
    /// 6.5 s after a match, 1 s to exit — plus 1.5 s of grace.
    static func parallelLifetimeSeconds(_ job: LoginJob) -> UInt32 {
        UInt32(clamping: job.options.timeoutSeconds + 14)
    }

    static func login(_ job: LoginJob) -> ExitCode {
        let started = MonotonicInstant.now().milliseconds
        if job.terminal != nil { alarm(parallelLifetimeSeconds(job)) }
        let prints = Result { () throws(ReaderError) in
            try PrintStore(stateDirectory: job.options.stateDirectory, user: job.user).load()
        }
        var settings = HTTPSettings(options: job.options)
        settings.sessionDirectory = job.options.stateDirectory + "/tls"
        let flow = HelperLoginFlow(
            job: job, readers: PlannedReaders(job: job, prints: prints), keys: DeviceKeys(job: job),
            channel: HTTPConnection(settings: settings), book: OfflineBookOnDisk(job: job),
            clock: SystemHelperClock(), background: ThreadBackground(), output: ModulePipe(terminal: job.terminal))
        let exit = flow.run(startedAt: started)
        // Once the verdict is out (written with write(2), the reader closed or fprintd's claim
        // released, the TLS session saved, the device key released by the flow) nothing of
        // the process matters any more, and the module waits for this exit before it answers
        // PAM. Returning would first release the reader's libfprint context, the system bus
        // connection and the TLS connection, about 0.5–0.7 ms on the login's path; the kernel
        // closes those.
        if exit.immediately { _exit(exit.code.rawValue) }
        return exit.code
    }
}

/// The request on standard input: read to its end, at most `LoginJob.maxBytes`, within two
/// seconds (the module wrote it before the helper started).
enum RequestInput {
    /// The `LoginJob` on standard input (`--login`, `--verify`); nil after a `FAIL usage` line.
    static func job() -> LoginJob? {
        switch read() {
        case let .success(text):
            switch Result(catching: { () throws(ConfigError) -> LoginJob in
                try LoginJob.parse(text, unprivilegedPortStart: KernelSettings.unprivilegedPortStart())
            }) {
            case let .success(parsed): return parsed
            case let .failure(error):
                LineOutput.emit(.fail(.usage, detail: error.description))
                return nil
            }
        case let .failure(why):
            LineOutput.emit(.fail(.usage, detail: why.message))
            return nil
        }
    }

    static func read() -> Result<String, UsageError> {
        let deadline = MonotonicInstant.now().adding(milliseconds: 2000)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var pfd = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, deadline.remaining)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return .failure(UsageError(message: "no request on standard input")) }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return .failure(UsageError(message: "cannot read the request")) }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            guard bytes.count <= LoginJob.maxBytes else {
                return .failure(UsageError(message: "request larger than \(LoginJob.maxBytes) bytes"))
            }
        }
        return .success(String(decoding: bytes, as: UTF8.self))
    }
}

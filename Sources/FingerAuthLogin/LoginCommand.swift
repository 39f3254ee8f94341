import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem
import FingerAuthTPM

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth-login --login`: the whole login step for the module, in this order —
/// read the request (standard input), check the prints, then in parallel reach the
/// authenticator (and sign the token ahead) on one thread while the other asks the system
/// bus (lid, fprintd), loads the device key and opens the reader; as soon as the reader
/// is open and the authenticator answered say `READY`, so that nobody is asked for a finger
/// that could not log them in. After a match: close the reader, `MATCH`, one POST on the
/// warm connection, the verdict.
enum LoginCommand {
    /// Exit codes: 0 only after `ACCEPTED`.
    enum ExitCode: Int32 {
        case accepted = 0
        case denied = 1
        case usage = 2
        case failed = 3
    }

    /// How long the reader may take to open, and how long the authenticator's warm-up may
    /// take beyond that (its own bound is 3 s).
    static let openSeconds = 5.0
    static let warmUpWaitMilliseconds: Int64 = 3500
    /// How long a match may wait for the signature made ahead (RSA-3072: a few ms).
    static let signingWaitMilliseconds: Int64 = 2000
    /// How long the warm-up thread waits for the key before it leaves the signature to the match.
    static let openWaitMilliseconds: Int64 = Int64(openSeconds * 1000) + 2000

    static func run() -> ExitCode {
        let job: LoginJob
        switch RequestInput.read() {
        case let .success(text):
            switch Result(catching: { () throws(ConfigError) -> LoginJob in
                try LoginJob.parse(text, unprivilegedPortStart: KernelSettings.unprivilegedPortStart())
            }) {
            case let .success(parsed): job = parsed
            case let .failure(error):
                LineOutput.emit(.fail(.usage, detail: error.description))
                return .usage
            }
        case let .failure(why):
            LineOutput.emit(.fail(.usage, detail: why.message))
            return .usage
        }
        do {
            return try login(job)
        } catch {
            LineOutput.emit(error.scanMessage)
            return .failed
        }
    }

    /// `prompt = parallel`: the module is blocked in the conversation and cannot kill this
    /// process at its deadline, so the helper bounds itself: SIGALRM (default action: the
    /// process ends) after every phase's bound — 5 s to READY, the finger's `timeout`,
    /// 6.5 s after a match, 1 s to exit — plus 1.5 s of grace.
    static func parallelLifetimeSeconds(_ job: LoginJob) -> UInt32 {
        UInt32(clamping: job.options.timeoutSeconds + 14)
    }

    static func login(_ job: LoginJob) throws(ReaderError) -> ExitCode {
        let started = MonotonicInstant.now()
        if job.terminal != nil { alarm(parallelLifetimeSeconds(job)) }
        let prints = Result { () throws(ReaderError) in
            try PrintStore(stateDirectory: job.options.stateDirectory, user: job.user).load()
        }
        // Prints are checked in forked children above: threads only from here on. One thread
        // reaches the authenticator from now on, while this one asks the system bus (lid,
        // fprintd: mostly waiting for other processes), loads the key and opens the reader.
        // Once it has an answer it says so (`warmed`), then signs the token ahead once this
        // thread handed it the key (`keyLoaded`), so that neither READY waits for the
        // signature nor a refused connection pays for one. Only that thread touches the
        // session until `background` has ended, but for `key` (set here before `keyLoaded`
        // fires) and `unreachable` (read here after `warmed` fired).
        let session = AuthenticatorSession(job: job)
        let warmed = OneShotSignal()
        let keyLoaded = OneShotSignal()
        let background = warmed.flatMap { signal in
            keyLoaded.flatMap { loaded in
                BackgroundWork {
                    session.prepare()
                    signal.fire()
                    let bound = MonotonicInstant.now().adding(milliseconds: openWaitMilliseconds)
                    if session.unreachable == nil, loaded.wait(until: bound) { session.signAhead() }
                }
            }
        }
        // The lid and fprintd before the key: a closed lid or a reader fprintd holds ends here.
        let plan = try ReaderPlan.make(job: job, localPrints: prints, openSeconds: openSeconds)
        let keyPath = StatePaths(root: job.options.stateDirectory, user: job.user).deviceKey
        switch DeviceKeyLoader(tcti: job.options.tpmTCTI).load(keyPath) {
        case let .success(loaded): session.key = loaded
        case let .failure(why):
            LineOutput.emit(.fail(.key, detail: why.message))
            return .failed
        }
        keyLoaded?.fire()
        if background == nil { session.prepare() }
        let reader = try plan.open(seconds: openSeconds)
        if background != nil, let warmed, !warmed.wait(until: started.adding(milliseconds: warmUpWaitMilliseconds)) {
            reader.close()
            LineOutput.emit(
                .fail(.unreachable, detail: "authenticator did not answer within \(warmUpWaitMilliseconds) ms"))
            return .failed
        }
        // Unreachable (refused, no route, a name server's no, a timeout while running, 502–504):
        // only a usable offline grant goes on. Any other failure (this host's own error, a
        // helper kept from running, TLS, a wrong answer) is no evidence: the password.
        var offline = false
        if let why = session.unreachable {
            guard session.offlineCause != nil else {
                reader.close()
                LineOutput.emit(
                    .fail(.unreachable, detail: "\(why); offline: not used, no evidence the network is the problem"))
                return .failed
            }
            switch session.offlineGrant() {
            case .success: offline = true
            case let .failure(refusal):
                reader.close()
                LineOutput.emit(.fail(.unreachable, detail: "\(why); offline: \(refusal)"))
                return .failed
            }
        }
        LineOutput.emit(.ready(reader: reader.readerName))
        let readyAt = MonotonicInstant.now()
        let deadline = Deadline.after(seconds: Double(job.options.timeoutSeconds))
        if background == nil { session.signAhead() }
        var left = job.options.maxTries
        while left > 0 {
            switch try reader.verify(deadline: deadline, events: LineOutput.emit) {
            case let .match(finger):
                let matchedAt = MonotonicInstant.now()
                reader.close()
                LineOutput.emit(.match(finger: finger))
                if offline {
                    // The warm-up ended (`warmed`, unreachable): the background work has nothing left to do.
                    _ = background?.wait(until: MonotonicInstant.now().adding(milliseconds: signingWaitMilliseconds))
                    let verdict = session.offlineLogin()
                    LineOutput.emit(verdict)
                    if case .offline = verdict {
                        if let terminal = job.terminal { TerminalInjector.inject(terminal) }
                        exitNow(.accepted, session)
                    }
                    exitNow(.denied, session)
                }
                if let background,
                    !background.wait(until: MonotonicInstant.now().adding(milliseconds: signingWaitMilliseconds))
                {
                    LineOutput.emit(
                        .unavailable(
                            jti: job.jti, kid: session.key?.kid ?? "",
                            detail: "signing took over \(signingWaitMilliseconds) ms"))
                    return .denied
                }
                let stages = LoginStageReport(
                    ready: readyAt.milliseconds &- started.milliseconds,
                    match: matchedAt.milliseconds &- readyAt.milliseconds)
                let verdict = session.login(stages: stages)
                LineOutput.emit(verdict)
                if case .accepted = verdict {
                    // prompt = parallel: the verdict is in the pipe first, then the newline
                    // ends the module's pending read.
                    if let terminal = job.terminal { TerminalInjector.inject(terminal) }
                    exitNow(.accepted, session)
                }
                exitNow(.denied, session)
            case .noMatch:
                left -= 1
                LineOutput.emit(.noMatch(triesLeft: left))
            }
        }
        return .denied
    }
}

extension LoginCommand {
    /// Ends the process once the verdict is out (written with write(2), the reader closed or
    /// fprintd's claim released, the TLS session saved): nothing of it matters any more, and
    /// the module waits for this exit before it answers PAM. Returning would first release
    /// the reader's libfprint context, the system bus connection and the TLS connection, about
    /// 0.5–0.7 ms on the login's path; the kernel closes those. The device key alone is
    /// released first: a TPM key's object is flushed from the TPM, where (reached without a
    /// resource manager) it would otherwise stay loaded and fill the TPM's few slots.
    static func exitNow(_ code: ExitCode, _ session: AuthenticatorSession) -> Never {
        session.key = nil
        _exit(code.rawValue)
    }
}

/// The request on standard input: read to its end, at most `LoginJob.maxBytes`, within two
/// seconds (the module wrote it before the helper started).
enum RequestInput {
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

import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// The login helper for `prompt = parallel`: started exactly as `HelperProcess` starts it
/// (`ChildProcess`, the request on its standard input), but the module does not wait for
/// its lines — it is blocked in the conversation meanwhile. Its lines stay in the pipe
/// (a handful of lines of at most 256 bytes; a pipe holds 64 KiB) until `verdictNow`.
package struct BackgroundHelper: BackgroundLoginHelper {
    /// For the helper to exit after its `ACCEPTED` (it injects the newline first).
    package var exitGraceMilliseconds: Int64 = 1000

    package init() {}

    package func start(_ job: LoginJob) -> Result<RunningLogin, BackgroundStartFailure> {
        let executable: TrustedExecutable
        switch TrustedExecutable.open(job.options.loginHelper) {
        case let .success(e): executable = e
        case let .failure(why): return .failure(BackgroundStartFailure(.unavailable("login helper " + why.description)))
        }
        switch ChildProcess.spawn(
            executable, arguments: HelperProcess.arguments(job.options.loginHelper),
            input: Array(job.text.utf8), maxLineBytes: HelperMessage.maxLineBytes)
        {
        case let .success(child): return .success(RunningHelper(child: child, exitGrace: exitGraceMilliseconds))
        case let .failure(why): return .failure(BackgroundStartFailure(.unavailable(why.description)))
        }
    }
}

/// One helper started in the background; killed at the latest when released.
final class RunningHelper: RunningLogin {
    private let child: ChildProcess
    private let exitGrace: Int64
    /// The match read so far (a remote approval's `MATCH` comes long before its verdict).
    private var finger: String?
    /// The last verdict-like line read so far (a refusal, a failure).
    private var last: HelperOutcome?

    init(child: ChildProcess, exitGrace: Int64) {
        self.child = child
        self.exitGrace = exitGrace
    }

    func verdictNow() -> HelperOutcome? { verdict(until: MonotonicInstant.now(), stopping: true) }

    func verdict(untilMilliseconds milliseconds: Int64) -> HelperOutcome? {
        verdict(until: MonotonicInstant.now().adding(milliseconds: max(0, milliseconds)), stopping: false)
    }

    func approvalPrompt(untilMilliseconds milliseconds: Int64) -> ApprovalPrompt {
        let deadline = MonotonicInstant.now().adding(milliseconds: max(0, milliseconds))
        while true {
            switch next(until: deadline) {
            case let .message(.approval(code, workstations)):
                return .asked(code: code, workstations: workstations)
            case let .message(message):
                // Anything else before the prompt is the end: read what is left, at once.
                if let decided = absorb(message) { return .ended(decided) }
                return .ended(verdictNow())
            case let .over(outcome):
                return .ended(outcome)
            }
        }
    }

    /// SIGTERM, then up to 2.5 s for the helper to withdraw its request and exit (one long
    /// poll of at most a second, one DELETE), then it is killed: the request must not stay
    /// shown on the workstation, and the password must not wait long.
    func withdraw() {
        child.signal(SIGTERM)
        child.finish(until: MonotonicInstant.now().adding(milliseconds: 2500))
    }

    func stop() { child.kill() }

    private enum Next {
        case message(HelperMessage)
        /// No more lines: the outcome (nil: none yet, and the helper was stopped).
        case over(HelperOutcome?)
    }

    private func next(until deadline: MonotonicInstant, stopping: Bool = true) -> Next {
        switch child.readLine(until: deadline) {
        case let .line(text):
            guard let message = HelperMessage(line: text) else {
                stop()
                return .over(.unavailable("login helper sent an unreadable line"))
            }
            return .message(message)
        case .timedOut where !stopping:
            return .over(nil)
        case .endOfOutput, .timedOut:
            stop()
            if last == nil && finger != nil {
                return .over(.unavailable("stopped after a match, before the authenticator's answer"))
            }
            return .over(last)
        case .garbage:
            stop()
            return .over(.unavailable("login helper sent too much or malformed output"))
        }
    }

    /// Reads lines until `deadline`: `.accepted` only for an `ACCEPTED` after a `MATCH`
    /// followed by exit status 0; whatever else, the helper is stopped — except, unless
    /// `stopping`, when nothing came by the deadline (nil: it is still running).
    private func verdict(until deadline: MonotonicInstant, stopping: Bool) -> HelperOutcome? {
        while true {
            switch next(until: deadline, stopping: stopping) {
            case let .message(message):
                if let decided = absorb(message) { return decided }
            case let .over(outcome):
                return outcome
            }
        }
    }

    /// Takes one line into the state read so far; the outcome when it ends the reading.
    private func absorb(_ message: HelperMessage) -> HelperOutcome? {
        switch message {
        case .ready, .retry, .approval: return nil
        case let .noMatch(left):
            if left == 0 { last = .tooManyTries }
        case let .match(matched): finger = matched
        case .accepted, .offline:
            guard let finger, let acceptance = message.acceptance(finger: finger) else {
                stop()
                return .unavailable("login helper accepted without a match")
            }
            let exit = child.finish(until: MonotonicInstant.now().adding(milliseconds: exitGrace))
            guard exit == .exited(0) else {
                return .unavailable("login helper reported acceptance but ended with \(HelperProcess.describe(exit))")
            }
            return acceptance
        case let .refused(jti, kid, code, detail):
            last = .refused(jti: jti, kid: kid, finger: finger, code: code, reason: detail)
        case let .unavailable(jti, kid, detail):
            last = .authenticatorUnavailable(jti: jti, kid: kid, finger: finger, reason: detail)
        case let .fail(reason, detail):
            let text = detail.isEmpty ? reason.rawValue : detail
            switch reason {
            case .unreachable: last = .unreachable(text)
            case .key: last = .keyUnusable(text)
            case .lidClosed: last = .lidClosed(text)
            default: last = .unavailable("reader: \(reason.rawValue)" + (detail.isEmpty ? "" : ": " + detail))
            }
        }
        return nil
    }
}

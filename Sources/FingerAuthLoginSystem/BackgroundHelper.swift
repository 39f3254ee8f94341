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

    init(child: ChildProcess, exitGrace: Int64) {
        self.child = child
        self.exitGrace = exitGrace
    }

    func verdictNow() -> HelperOutcome? {
        var finger: String?
        var last: HelperOutcome?
        let now = MonotonicInstant.now()
        while true {
            switch child.readLine(until: now) {
            case let .line(text):
                guard let message = HelperMessage(line: text) else {
                    stop()
                    return .unavailable("login helper sent an unreadable line")
                }
                switch message {
                case .ready, .retry: continue
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
                        return .unavailable(
                            "login helper reported acceptance but ended with \(HelperProcess.describe(exit))")
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
            case .endOfOutput, .timedOut:
                stop()
                if last == nil && finger != nil {
                    return .unavailable("stopped after a match, before the authenticator's answer")
                }
                return last
            case .garbage:
                stop()
                return .unavailable("login helper sent too much or malformed output")
            }
        }
    }

    func stop() { child.kill() }
}

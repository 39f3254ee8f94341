import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// The login step as the module runs it: `fingerauth-login --login` in its own process,
/// started clean (`ChildProcess`), the `LoginJob` on its standard input, its lines relayed
/// as they come, each phase under its own deadline, killed with its process group when a
/// deadline passes. Only an `ACCEPTED` line followed by exit status 0 is a yes.
package struct HelperProcess: LoginHelper {
    /// Until the first line: the helper loads prints and key, opens the reader and reaches
    /// the authenticator (connect bound 2 s, warm-up request 3 s) in parallel.
    package var startupMilliseconds: Int64 = 5000
    /// Over `timeout` while the finger is awaited (reader close, scheduling).
    package var scanGraceMilliseconds: Int64 = 1500
    /// After `MATCH`: signing and one request on the warm connection (the client's bound is 5 s).
    package var verdictMilliseconds: Int64 = 6500
    /// For the helper to exit after its last line.
    package var exitGraceMilliseconds: Int64 = 1000

    package init() {}

    /// argv of the helper in the module's mode.
    package static func arguments(_ path: String) -> [String] { [path, "--login"] }

    package func run(_ job: LoginJob, relay: (HelperMessage) -> Bool) -> HelperOutcome {
        let executable: TrustedExecutable
        switch TrustedExecutable.open(job.options.loginHelper) {
        case let .success(e): executable = e
        case let .failure(why): return .unavailable("login helper " + why.description)
        }
        let child: ChildProcess
        switch ChildProcess.spawn(
            executable, arguments: HelperProcess.arguments(job.options.loginHelper),
            input: Array(job.text.utf8), maxLineBytes: HelperMessage.maxLineBytes)
        {
        case let .success(c): child = c
        case let .failure(why): return .unavailable(why.description)
        }
        var deadline = MonotonicInstant.now().adding(milliseconds: startupMilliseconds)
        var finger: String?
        var phase = "before the reader was ready"
        while true {
            switch child.readLine(until: deadline) {
            case let .line(text):
                guard let message = HelperMessage(line: text) else {
                    child.kill()
                    return .unavailable("login helper sent an unreadable line")
                }
                switch message {
                case .ready:
                    guard relay(message) else {
                        child.kill()
                        return .conversationFailed
                    }
                    phase = "while waiting for a finger"
                    deadline = MonotonicInstant.now().adding(
                        milliseconds: Int64(job.options.timeoutSeconds) * 1000 + scanGraceMilliseconds)
                case .retry:
                    guard relay(message) else {
                        child.kill()
                        return .conversationFailed
                    }
                case let .noMatch(left):
                    guard relay(message) else {
                        child.kill()
                        return .conversationFailed
                    }
                    if left == 0 {
                        finish(child)
                        return .tooManyTries
                    }
                case let .match(matched):
                    _ = relay(message)
                    finger = matched
                    phase = "after a match"
                    deadline = MonotonicInstant.now().adding(milliseconds: verdictMilliseconds)
                case .accepted, .offline:
                    _ = relay(message)
                    let exit = finish(child)
                    guard let finger, let acceptance = message.acceptance(finger: finger) else {
                        return .unavailable("login helper accepted without a match")
                    }
                    guard exit == .exited(0) else {
                        return .unavailable(
                            "login helper reported acceptance but ended with \(HelperProcess.describe(exit))")
                    }
                    return acceptance
                case .approval:
                    child.kill()
                    return .unavailable("login helper asked for a remote approval in a login by finger")
                case let .refused(jti, answeredKID, code, detail):
                    _ = relay(message)
                    finish(child)
                    return .refused(jti: jti, kid: answeredKID, finger: finger, code: code, reason: detail)
                case let .unavailable(jti, answeredKID, detail):
                    _ = relay(message)
                    finish(child)
                    return .authenticatorUnavailable(jti: jti, kid: answeredKID, finger: finger, reason: detail)
                case let .fail(reason, detail):
                    _ = relay(message)
                    finish(child)
                    let text = detail.isEmpty ? reason.rawValue : detail
                    switch reason {
                    case .unreachable: return .unreachable(text)
                    case .key: return .keyUnusable(text)
                    case .lidClosed: return .lidClosed(text)
                    default: return .unavailable("reader: \(reason.rawValue)" + (detail.isEmpty ? "" : ": " + detail))
                    }
                }
            case .endOfOutput:
                let exit = finish(child)
                return .unavailable("login helper ended \(phase) without a verdict (\(HelperProcess.describe(exit)))")
            case .timedOut:
                child.kill()
                if finger == nil && phase == "while waiting for a finger" {
                    return .unavailable("no finger within \(job.options.timeoutSeconds) s; login helper stopped")
                }
                return .unavailable("login helper timed out \(phase); stopped")
            case .garbage:
                child.kill()
                return .unavailable("login helper sent too much or malformed output")
            }
        }
    }

    @discardableResult
    private func finish(_ child: ChildProcess) -> ChildExit {
        child.finish(until: MonotonicInstant.now().adding(milliseconds: exitGraceMilliseconds))
    }

    package static func describe(_ exit: ChildExit) -> String {
        switch exit {
        case let .exited(code): return "exit status \(code)"
        case let .signaled(signal): return "killed by signal \(signal)"
        case .unknown: return "status unknown"
        }
    }
}

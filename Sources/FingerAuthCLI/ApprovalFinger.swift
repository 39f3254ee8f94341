import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

/// The user's finger for a remote approval: the login helper in its `--verify` mode, started
/// clean as the module starts it (`ChildProcess`), with the user's `LoginJob` on its standard
/// input, so that the reader is chosen and the user's prints are used exactly as in a login
/// on this workstation (libfprint or fprintd, the lid). Only `MATCH` and exit status 0 is a
/// match; the helper loads no key and sends nothing.
enum ApprovalFinger {
    enum Outcome: Equatable {
        case matched(finger: String)
        /// Every try missed.
        case noMatch
        /// No finger could be read: the reason.
        case failed(String)
    }

    /// Until `READY`: the plan (system bus 2 s) and the reader's opening (5 s).
    static let startupMilliseconds: Int64 = 9000
    /// Over `timeout` while the finger is awaited, and for the helper's exit.
    static let graceMilliseconds: Int64 = 2000

    /// Reads `user`'s finger; `show` gets the lines for the person (the reader's name, misses).
    static func read(user: String, options: Options, issuer: String, show: (String) -> Void) -> Outcome {
        guard let jti = SystemRandom().bytes(16) else { return .failed("no random bytes") }
        let job = LoginJob(
            user: user, service: "fingerauth-approve", jti: Base64URL.encode(jti), issuer: issuer, options: options)
        let child: ChildProcess
        switch TrustedExecutable.open(options.loginHelper).flatMap({
            ChildProcess.spawn(
                $0, arguments: [options.loginHelper, "--verify"], input: Array(job.text.utf8),
                maxLineBytes: HelperMessage.maxLineBytes)
        }) {
        case let .success(started): child = started
        case let .failure(why): return .failed("login helper: \(why.description)")
        }
        var deadline = MonotonicInstant.now().adding(milliseconds: startupMilliseconds)
        var matched: String?
        while true {
            switch child.readLine(until: deadline) {
            case let .line(text):
                switch HelperMessage(line: text) {
                case let .ready(reader)?:
                    show("touch the reader (\(reader)) with \(user)'s finger to approve, or Ctrl-C to leave it pending")
                    deadline = MonotonicInstant.now().adding(
                        milliseconds: Int64(options.timeoutSeconds) &* 1000 &+ graceMilliseconds)
                case let .retry(hint)?:
                    show("try again: \(hint)")
                case let .noMatch(left)?:
                    show(left > 0 ? "no match; \(left) \(left == 1 ? "try" : "tries") left" : "no match")
                    if left == 0 {
                        _ = child.finish(until: MonotonicInstant.now().adding(milliseconds: graceMilliseconds))
                        return .noMatch
                    }
                case let .match(finger)?:
                    matched = finger
                    deadline = MonotonicInstant.now().adding(milliseconds: graceMilliseconds)
                case let .fail(reason, detail)?:
                    _ = child.finish(until: MonotonicInstant.now().adding(milliseconds: graceMilliseconds))
                    return .failed(detail.isEmpty ? reason.rawValue : detail)
                default:
                    child.kill()
                    return .failed("the login helper sent an unexpected line")
                }
            case .endOfOutput:
                let exit = child.finish(until: MonotonicInstant.now().adding(milliseconds: graceMilliseconds))
                if let matched, exit == .exited(0) { return .matched(finger: matched) }
                if exit == .exited(1) { return .noMatch }
                return .failed("the login helper ended without a match (\(HelperProcess.describe(exit)))")
            case .timedOut:
                child.kill()
                return .failed(
                    matched == nil
                        ? "no finger within \(options.timeoutSeconds) s" : "the login helper did not exit after a match"
                )
            case .garbage:
                child.kill()
                return .failed("the login helper sent malformed output")
            }
        }
    }
}

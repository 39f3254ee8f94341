import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

/// The user's finger for a remote approval: the login helper in its `--verify` mode, started
/// clean as the module starts it (`ChildProcess`), with the user's `LoginJob` on its standard
/// input, so that the reader is chosen and the user's prints are used exactly as in a login
/// on this workstation (libfprint or fprintd, the lid). `MATCH` is the match: the helper says
/// it before it closes the reader, so that the decision does not wait for the close, and its
/// exit is awaited once the decision is sent (`settle`). The helper loads no key and sends
/// nothing.
///
/// A scan is read in slices (`next(until:)`), so that its owner can watch other things in
/// between (the watcher: the notification's "Not me", the approval's end) and `stop()` it.
package final class FingerScan {
    /// What the scan said.
    package enum Event: Equatable, Sendable {
        /// The reader is open (its name): the finger is awaited.
        case ready(reader: String)
        /// A try could not be read well: the reader's hint.
        case retry(String)
        /// A try missed; `left` more are allowed (the last miss is `noMatch`).
        case missed(left: Int)
        case matched(finger: String)
        /// Every try missed.
        case noMatch
        /// No finger could be read: the reason.
        case failed(String)
    }

    /// Until `READY`: the plan (system bus 2 s) and the reader's opening (5 s).
    package static let startupMilliseconds: Int64 = 9000
    /// Over `timeout` while the finger is awaited, and for the helper's exit.
    package static let graceMilliseconds: Int64 = 2000

    private let child: ChildProcess
    private let timeoutSeconds: Int
    private var deadline: MonotonicInstant
    /// Set once the scan has ended (an outcome given, or stopped).
    package private(set) var ended = false

    private init(child: ChildProcess, timeoutSeconds: Int) {
        self.child = child
        self.timeoutSeconds = timeoutSeconds
        deadline = MonotonicInstant.now().adding(milliseconds: Self.startupMilliseconds)
    }

    /// Starts the login helper for `user`'s finger (`options.timeoutSeconds` once the reader is open).
    package static func start(user: String, options: Options, issuer: String) -> Result<FingerScan, ApprovalFailure> {
        guard let jti = SystemRandom().bytes(16) else { return .failure(ApprovalFailure("no random bytes")) }
        let job = LoginJob(
            user: user, service: "fingerauth-approve", jti: Base64URL.encode(jti), issuer: issuer, options: options)
        switch TrustedExecutable.open(options.loginHelper).flatMap({
            ChildProcess.spawn(
                $0, arguments: [options.loginHelper, "--verify"], input: Array(job.text.utf8),
                maxLineBytes: HelperMessage.maxLineBytes)
        }) {
        case let .success(child): return .success(FingerScan(child: child, timeoutSeconds: options.timeoutSeconds))
        case let .failure(why): return .failure(ApprovalFailure("login helper: \(why.description)"))
        }
    }

    /// The scan's next event, waiting until `until` at most: nil when none came by then.
    /// After an ending event (matched, noMatch, failed) the scan is over.
    package func next(until: MonotonicInstant) -> Event? {
        guard !ended else { return nil }
        let wait = min(until, deadline)
        switch child.readLine(until: wait) {
        case let .line(text):
            switch HelperMessage(line: text) {
            case let .ready(reader)?:
                deadline = MonotonicInstant.now().adding(
                    milliseconds: Int64(timeoutSeconds) &* 1000 &+ Self.graceMilliseconds)
                return .ready(reader: reader)
            case let .retry(hint)?:
                return .retry(hint)
            case let .noMatch(left)?:
                guard left == 0 else { return .missed(left: left) }
                return end(.noMatch, finishing: true)
            case let .match(finger)?:
                ended = true
                return .matched(finger: finger)
            case let .fail(reason, detail)?:
                return end(.failed(detail.isEmpty ? reason.rawValue : detail), finishing: true)
            default:
                return end(.failed("the login helper sent an unexpected line"), finishing: false)
            }
        case .endOfOutput:
            ended = true
            let exit = child.finish(until: MonotonicInstant.now().adding(milliseconds: Self.graceMilliseconds))
            if exit == .exited(1) { return .noMatch }
            return .failed("the login helper ended without a match (\(HelperProcess.describe(exit)))")
        case .timedOut:
            guard MonotonicInstant.now() >= deadline else { return nil }
            return end(.failed("no finger within \(timeoutSeconds) s"), finishing: false)
        case .garbage:
            return end(.failed("the login helper sent malformed output"), finishing: false)
        }
    }

    /// After a match, once the decision is sent: waits (bounded) for the helper to close the
    /// reader and exit, so that the reader is free for the next scan. After any other end it
    /// returns at once.
    package func settle() {
        _ = child.finish(until: MonotonicInstant.now().adding(milliseconds: Self.graceMilliseconds))
    }

    /// Stops the scan now (the reader is released as the helper dies).
    package func stop() {
        guard !ended else { return }
        ended = true
        _ = child.kill()
    }

    private func end(_ event: Event, finishing: Bool) -> Event {
        ended = true
        if finishing {
            _ = child.finish(until: MonotonicInstant.now().adding(milliseconds: Self.graceMilliseconds))
        } else {
            _ = child.kill()
        }
        return event
    }
}

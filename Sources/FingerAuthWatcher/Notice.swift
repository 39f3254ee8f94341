import FingerAuthCore
import FingerAuthSystem

/// The watcher's side of one notification: the notifier child (`Notifier`) started as the
/// user, what it says, and the end of the notification (its standard input closed).
final class Notice {
    /// What the person did with it.
    enum Answer: Equatable {
        case notMe
        /// Closed (by the person, or it expired on the desktop), or the notifier is gone.
        case closed
    }

    private let child: ChildProcess
    private var over = false

    private init(child: ChildProcess) { self.child = child }

    /// Shows `summary` and `body` on the session bus at `socket` as `uid`/`gid`: the notice
    /// once the desktop took it, else why not.
    static func show(
        executable: String, uid: UInt32, gid: UInt32, socket: String, summary: String, body: String
    ) -> Result<Notice, SpawnFailure> {
        let started = TrustedExecutable.open(executable).flatMap {
            ChildProcess.spawn(
                $0, arguments: [executable, "--notify", String(uid), String(gid), socket],
                input: Array((summary + "\n" + body + "\n").utf8), maxLineBytes: 512, keepInput: true)
        }
        guard case let .success(child) = started else { return started.map { Notice(child: $0) } }
        let notice = Notice(child: child)
        switch child.readLine(until: MonotonicInstant.now().adding(milliseconds: 8000)) {
        case let .line(text) where text.hasPrefix("SHOWN "): return .success(notice)
        case let .line(text) where text.hasPrefix("FAILED "):
            notice.close()
            return .failure(SpawnFailure(String(text.dropFirst(7))))
        default:
            notice.close()
            return .failure(SpawnFailure("the notifier did not answer"))
        }
    }

    /// What the person did since the last call, without waiting; nil for nothing.
    func next() -> Answer? {
        guard !over else { return nil }
        switch child.readLine(until: MonotonicInstant.now()) {
        case .line("NOT-ME"): return .notMe
        case .timedOut: return nil
        case let .line(text) where !text.hasPrefix("CLOSED "): return nil
        case .line, .endOfOutput, .garbage:
            over = true
            return .closed
        }
    }

    /// Closes the notification (the notifier calls `CloseNotification` and exits).
    func close() {
        over = true
        child.closeInput()
        if child.finish(until: MonotonicInstant.now().adding(milliseconds: 4000)) == .unknown { _ = child.kill() }
    }
}

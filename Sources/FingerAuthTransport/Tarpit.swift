import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

/// Actions run `delay` seconds after they were queued, on a thread of its own: the HTTP
/// layer resumes the parked connections of answers it holds back (`Step.answerAfterPause`).
/// One delay for all, so the queue is in due order as it is. `stop()` runs what is left at
/// once.
///
/// `@unchecked Sendable`: request threads queue, its thread runs. `queue`, `head`, `stopping`
/// and `thread` change only under `lock`; actions are `@Sendable`.
final class Tarpit: @unchecked Sendable {
    let delay: Double
    private let lock = Lock()
    private let wake = Condition()
    private var queue: [(due: Deadline, action: @Sendable () -> Void)] = []
    private var head = 0
    private var stopping = false
    private var thread: WorkerThread?

    init(delay: Double) {
        self.delay = delay
    }

    /// Starts the thread; false when it could not be created (then `hold` runs at once).
    @discardableResult
    func start() -> Bool {
        guard case let .success(started) = WorkerThread.start({ [self] in loop() }) else { return false }
        lock.withLock { thread = started }
        return true
    }

    /// Runs `action` after the delay (at once when the thread is not running).
    func hold(_ action: @escaping @Sendable () -> Void) {
        let queued = lock.withLock { () -> Bool in
            guard thread != nil, !stopping else { return false }
            queue.append((Deadline.after(seconds: delay), action))
            if queue.count - head == 1 { wake.signal() }
            return true
        }
        if !queued { action() }
    }

    /// Runs every held action now and stops the thread.
    func stop() {
        let running = lock.withLock { () -> WorkerThread? in
            stopping = true
            wake.signal()
            let running = thread
            thread = nil
            return running
        }
        running?.join()
    }

    private func loop() {
        while true {
            let (due, done) = lock.withLock { () -> ([@Sendable () -> Void], Bool) in
                while !stopping {
                    guard head < queue.count else {
                        wake.wait(lock, until: Deadline.after(seconds: 1))
                        continue
                    }
                    if queue[head].due.hasPassed { break }
                    wake.wait(lock, until: queue[head].due)
                }
                var ready: [@Sendable () -> Void] = []
                while head < queue.count && (stopping || queue[head].due.hasPassed) {
                    ready.append(queue[head].action)
                    head += 1
                }
                if head > 1024 && head * 2 > queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
                return (ready, stopping && head >= queue.count)
            }
            for action in due { action() }
            if done { return }
        }
    }
}

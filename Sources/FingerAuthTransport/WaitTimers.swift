import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

/// Actions due at a time of their own, on one thread: the HTTP layer resumes parked
/// connections with them — the answers it holds back (`Step.outcomeAfterPause`) and the
/// deadlines of long polls (`Step.await`). A heap by due time; `stop()` runs what is left
/// at once.
///
/// `@unchecked Sendable`: request threads add, its thread runs. `heap`, `serial`, `stopping`
/// and `thread` change only under `lock`; actions are `@Sendable`.
package final class WaitTimers: @unchecked Sendable {
    private struct Entry {
        let due: Double
        let serial: UInt64
        let action: @Sendable () -> Void
        func before(_ other: Entry) -> Bool { due < other.due || (due == other.due && serial < other.serial) }
    }

    private let lock = Lock()
    private let wake = Condition()
    private var heap: [Entry] = []
    private var serial: UInt64 = 0
    private var stopping = false
    private var thread: WorkerThread?

    /// Timers not yet started.
    package init() {}

    /// Starts the thread; false when it could not be created (then `after` runs at once).
    @discardableResult
    package func start() -> Bool {
        guard case let .success(started) = WorkerThread.start({ [self] in loop() }) else { return false }
        lock.withLock { thread = started }
        return true
    }

    /// Runs `action` after `seconds` (at once when the thread is not running).
    package func after(_ seconds: Double, _ action: @escaping @Sendable () -> Void) {
        after(seconds, roundedUpTo: 0, action)
    }

    /// Runs `action` after `seconds`, at the next multiple of `tick` seconds of the monotonic
    /// clock from then (`tick` 0: exactly then), so that deadlines falling within one tick
    /// run together. A long poll's heartbeat is one: each resumes a parked connection, and
    /// libmicrohttpd's resume looks over all of its suspended connections once a pass —
    /// 10,000 watches re-polling one by one made that walk most of an idle server's CPU.
    package func after(_ seconds: Double, roundedUpTo tick: Double, _ action: @escaping @Sendable () -> Void) {
        var due = monotonicSeconds() + max(0, seconds)
        if tick > 0 { due = (due / tick).rounded(.up) * tick }
        let queued = lock.withLock { () -> Bool in
            guard thread != nil, !stopping else { return false }
            serial &+= 1
            push(Entry(due: due, serial: serial, action: action))
            if heap.first?.serial == serial { wake.signal() }
            return true
        }
        if !queued { action() }
    }

    /// Runs every action now and stops the thread.
    package func stop() {
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
                    guard let first = heap.first else {
                        wake.wait(lock, until: Deadline.after(seconds: 1))
                        continue
                    }
                    let left = first.due - monotonicSeconds()
                    if left <= 0 { break }
                    wake.wait(lock, until: Deadline.after(seconds: left))
                }
                var ready: [@Sendable () -> Void] = []
                let now = monotonicSeconds()
                while let first = heap.first, stopping || first.due <= now {
                    ready.append(first.action)
                    pop()
                }
                return (ready, stopping && heap.isEmpty)
            }
            for action in due { action() }
            if done { return }
        }
    }

    private func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].before(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func pop() {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count && heap[left].before(heap[first]) { first = left }
            if right < heap.count && heap[right].before(heap[first]) { first = right }
            if first == parent { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }
}

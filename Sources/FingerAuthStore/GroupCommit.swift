import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

#if canImport(Glibc)
import Glibc
#endif

/// Group commit: the request path's writes of many requests share one transaction and one
/// durable commit. Request threads hand their items to `write` and wait; one writer thread
/// takes everything waiting at that moment (up to `maxBatch` items) into one
/// `AuthStorage.commit`, and wakes each request only once *its* batch is durable. While one
/// batch commits, the next gathers — under load the batches grow and the commits per login
/// fall. A request that finds nothing committing and nothing queued commits on its own
/// thread (`commitAlone`): at low load a login then costs no hand-over to the writer and
/// back — on a virtual machine each wake-up of another thread is an interrupt between
/// cores. A batch that fails (disk full, database gone) fails every request in it: none is
/// answered 2xx.
///
/// `@unchecked Sendable`: request threads and the writer share it. The queue, every ticket's
/// fields, `committing`, `writerWaits`, `stopping`, `thread` and `statistics` change only
/// under `lock`; the store and closures are Sendable and set in `init`.
package final class GroupCommit: Committer, @unchecked Sendable {
    /// One request's items and, once its batch committed, their outcomes. Its own condition
    /// variable wakes only this request (a shared one would wake every waiting request at
    /// every commit: a thundering herd that cost more CPU than the logins).
    private final class Ticket {
        let items: [WriteItem]
        var outcomes: [WriteOutcome] = []
        var failure: StoreError?
        var done = false
        let committed = Condition()
        /// For a request that does not wait (`submit`): called on the writer's thread.
        let completion: (@Sendable (Result<[WriteOutcome], StoreError>) -> Void)?

        init(items: [WriteItem], completion: (@Sendable (Result<[WriteOutcome], StoreError>) -> Void)? = nil) {
            self.items = items
            self.completion = completion
        }
    }

    let store: any BatchStore
    let maxBatch: Int
    /// Longest a request waits for its batch, seconds; past it the request fails (503).
    let waitSeconds: Int
    /// Called once a second or so, on the writer thread, for items of its own (refusal
    /// counts gathered in memory); they join the next batch.
    private let periodic: @Sendable () -> [WriteItem]
    private let log: @Sendable (String) -> Void

    private let lock = Lock()
    private let work = Condition()
    private var queue: [Ticket] = []
    /// A batch (the writer's or a lone request's) is being committed.
    private var committing = false
    /// The writer waits for a lone request's commit to end (it wants a signal then).
    private var writerWaits = false
    private var stopping = false
    private var thread: WorkerThread?
    private var statistics = (batches: Int64(0), items: Int64(0), failed: Int64(0))

    package init(
        store: any BatchStore, maxBatch: Int = 512, waitSeconds: Int = 10,
        periodic: @escaping @Sendable () -> [WriteItem] = { [] },
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.store = store
        self.maxBatch = max(1, maxBatch)
        self.waitSeconds = max(1, waitSeconds)
        self.periodic = periodic
        self.log = log
    }

    deinit { stop() }

    /// Batches committed, items in them, and batches that failed, since start.
    package var counts: (batches: Int64, items: Int64, failed: Int64) {
        lock.withLock { statistics }
    }

    /// Starts the writer thread; false when it could not be created (then `write` commits
    /// on the caller's thread, one request per transaction).
    @discardableResult
    package func start() -> Bool {
        switch WorkerThread.start({ [self] in loop() }) {
        case let .success(started):
            lock.withLock { thread = started }
            return true
        case let .failure(error):
            log("cannot start the group-commit thread: \(error); committing per request")
            return false
        }
    }

    /// Commits what is queued, then stops the writer thread and waits for it.
    package func stop() {
        let running = lock.withLock { () -> WorkerThread? in
            stopping = true
            let running = thread
            thread = nil
            work.broadcast()
            return running
        }
        running?.join()
    }

    /// Writes `items` in the next batch and returns their outcomes once that batch is
    /// durable; throws when the batch failed or did not commit within `waitSeconds`.
    package func write(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] {
        guard !items.isEmpty else { return [] }
        let ticket = Ticket(items: items)
        lock.lock()
        guard thread != nil, !stopping else {
            lock.unlock()
            return try store.commit(items)
        }
        queue.append(ticket)
        work.signal()
        let deadline = Deadline.after(seconds: Double(waitSeconds))
        while !ticket.done {
            if !ticket.committed.wait(lock, until: deadline) && !ticket.done && deadline.hasPassed {
                lock.unlock()
                throw StoreError("no commit within \(waitSeconds) s")
            }
        }
        lock.unlock()
        if let failure = ticket.failure { throw failure }
        return ticket.outcomes
    }

    /// Writes `items` in the next batch and calls `completion` once that batch is durable
    /// or failed — on the writer's thread, which it must not keep (the HTTP layer only
    /// resumes a parked request there). Without the writer thread the items are committed
    /// here and `completion` is called before this returns.
    package func submit(
        _ items: [WriteItem], completion: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void
    ) {
        guard !items.isEmpty else { return completion(.success([])) }
        lock.lock()
        guard thread != nil, !stopping else {
            lock.unlock()
            do throws(StoreError) {
                completion(.success(try store.commit(items)))
            } catch {
                completion(.failure(error))
            }
            return
        }
        queue.append(Ticket(items: items, completion: completion))
        work.signal()
        lock.unlock()
    }

    /// Commits `items` on the caller's thread when nothing is committing and nothing is
    /// queued, and returns their outcomes (or the failure) once durable; nil when the writer
    /// is busy — then the caller hands them to `submit`, which batches them with the rest.
    package func commitAlone(_ items: [WriteItem]) -> Result<[WriteOutcome], StoreError>? {
        guard !items.isEmpty else { return .success([]) }
        lock.lock()
        guard thread != nil, !stopping, !committing, queue.isEmpty else {
            lock.unlock()
            return nil
        }
        committing = true
        lock.unlock()
        let result = commitToStore(items)
        var failed = false
        if case let .failure(failure) = result {
            failed = true
            log("a lone request's write not committed: \(failure)")
        }
        lock.lock()
        finishedBatch(items: items.count, failed: failed)
        if !queue.isEmpty || writerWaits { work.signal() }
        lock.unlock()
        return result
    }

    private func loop() {
        var nextPeriodic = Deadline.after(seconds: 1)
        while true {
            lock.lock()
            let deadline = Deadline.after(seconds: 1)
            while (queue.isEmpty || committing) && !stopping && !deadline.hasPassed {
                work.wait(lock, until: deadline)
            }
            // A lone request's commit holds the store until it ends; wait for it.
            while committing {
                writerWaits = true
                work.wait(lock, until: Deadline.after(seconds: 1))
            }
            writerWaits = false
            var taken: [Ticket] = []
            var size = 0
            while let first = queue.first, taken.isEmpty || size + first.items.count <= maxBatch {
                taken.append(first)
                size += first.items.count
                queue.removeFirst()
            }
            let finished = stopping && queue.isEmpty
            let periodicDue = nextPeriodic.hasPassed || finished
            committing = !taken.isEmpty || periodicDue
            lock.unlock()

            var extra: [WriteItem] = []
            if periodicDue {
                nextPeriodic = Deadline.after(seconds: 1)
                extra = periodic()
            }
            if !taken.isEmpty || !extra.isEmpty {
                commit(taken, extra: extra)
            } else if periodicDue {
                lock.withLock { committing = false }
            }
            if finished { return }
        }
    }

    private func commit(_ tickets: [Ticket], extra: [WriteItem]) {
        var items: [WriteItem] = []
        for ticket in tickets { items.append(contentsOf: ticket.items) }
        items.append(contentsOf: extra)
        var outcomes: [WriteOutcome] = []
        var failure: StoreError?
        switch commitToStore(items) {
        case let .success(committed): outcomes = committed
        case let .failure(error): failure = error
        }
        if let failure { log("batch of \(tickets.count) requests not committed: \(failure)") }
        lock.lock()
        var index = 0
        for ticket in tickets {
            if let failure {
                ticket.failure = failure
            } else {
                ticket.outcomes = Array(outcomes[index..<(index + ticket.items.count)])
            }
            index += ticket.items.count
            ticket.done = true
            ticket.committed.signal()
        }
        finishedBatch(items: items.count, failed: failure != nil)
        lock.unlock()
        for ticket in tickets {
            guard let completion = ticket.completion else { continue }
            if let failure = ticket.failure {
                completion(.failure(failure))
            } else {
                completion(.success(ticket.outcomes))
            }
        }
    }

    /// One `store.commit` of `items`: their outcomes, or why none stands (an error, or an
    /// answer that does not have one outcome per item).
    private func commitToStore(_ items: [WriteItem]) -> Result<[WriteOutcome], StoreError> {
        do throws(StoreError) {
            let outcomes = try store.commit(items)
            guard outcomes.count == items.count else {
                return .failure(StoreError("commit answered \(outcomes.count) of \(items.count) items"))
            }
            return .success(outcomes)
        } catch {
            return .failure(error)
        }
    }

    /// A batch (the writer's or a lone request's) has ended: counts it and lets the next
    /// one start. Called with `lock` held.
    private func finishedBatch(items: Int, failed: Bool) {
        statistics.batches += 1
        statistics.items += Int64(items)
        if failed { statistics.failed += 1 }
        committing = false
    }
}

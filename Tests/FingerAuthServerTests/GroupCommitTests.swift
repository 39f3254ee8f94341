import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem
import FingerAuthThreads
import FingerAuthTransport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A store that records how its commits were batched, and can be told to fail.
///
/// `@unchecked Sendable`: its counters change only under `lock`; the SQLite store is
/// thread-safe.
final class CountingStore: @unchecked Sendable {
    let base: SQLiteStore
    private let lock = Lock()
    private(set) var batchSizes: [Int] = []
    /// Commits running at once, and the most ever seen (the store takes one at a time).
    private var running = 0
    private(set) var mostAtOnce = 0
    /// Threads the commits ran on.
    private(set) var threads: [pthread_t] = []
    var failing = false
    /// Microseconds each commit sleeps, so that concurrent writers pile up behind it.
    var delay: UInt32 = 0
    /// Microseconds the first commit sleeps (on a loaded machine, time for every writer
    /// thread to start and queue behind it).
    var firstDelay: UInt32 = 0

    init(_ base: SQLiteStore) { self.base = base }

    func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] {
        let first = lock.withLock { () -> Bool in
            batchSizes.append(items.count)
            threads.append(pthread_self())
            running += 1
            mostAtOnce = max(mostAtOnce, running)
            return batchSizes.count == 1
        }
        defer { lock.withLock { running -= 1 } }
        if first && firstDelay > 0 { usleep(firstDelay) } else if delay > 0 { usleep(delay) }
        if failing { throw StoreError("database or disk is full") }
        return try base.commit(items)
    }
}

/// Group commit: many requests' writes in one commit, each answered only after its own
/// batch committed, and a failed batch failing every request in it.
final class GroupCommitTests: XCTestCase {
    var temp = TempDatabase()

    override func setUp() { temp = TempDatabase() }
    override func tearDown() { temp.cleanup() }

    /// Runs `count` writers at once, each on a thread of its own (not a pool capped at the
    /// number of cores, which would let only two write at a time), each writing one audit
    /// row; returns their results.
    func concurrentWrites(_ writer: GroupCommit, count: Int) -> [Result<[WriteOutcome], StoreError>] {
        let results = ResultBox(count: count)
        var threads: [WorkerThread] = []
        for i in 0..<count {
            let started = WorkerThread.start {
                let event = AuditEvent(event: .login, outcome: .deny, reason: .detail("r\(i)"), verified: false)
                do throws(StoreError) {
                    results.set(i, .success(try writer.write([.audit(event, time: Int64(i))])))
                } catch {
                    results.set(i, .failure(error))
                }
            }
            if case let .success(thread) = started { threads.append(thread) }
        }
        for thread in threads { thread.join() }
        return results.all
    }

    func testConcurrentWritesShareCommitsAndEachIsDurableOnReturn() throws {
        let base = try SQLiteStore(path: temp.path)
        let store = CountingStoreAdapter(CountingStore(base))
        store.inner.delay = 2000
        store.inner.firstDelay = 300_000
        let writer = GroupCommit(store: store)
        XCTAssertTrue(writer.start())
        let results = concurrentWrites(writer, count: 64)
        writer.stop()
        XCTAssertEqual(results.filter { (try? $0.get()) == [.written] }.count, 64)
        XCTAssertEqual(try base.auditEvents(limit: 1000).count, 64)
        let batches = store.inner.batchSizes
        XCTAssertEqual(batches.reduce(0, +), 64)
        XCTAssertLessThan(batches.count, 64, "some writes shared a commit: \(batches)")
        XCTAssertEqual(writer.counts.items, 64)
    }

    func testAFailedBatchFailsEveryRequestInItAndAcceptsNone() throws {
        let base = try SQLiteStore(path: temp.path)
        let store = CountingStoreAdapter(CountingStore(base))
        store.inner.failing = true
        let writer = GroupCommit(store: store)
        XCTAssertTrue(writer.start())
        let results = concurrentWrites(writer, count: 16)
        writer.stop()
        XCTAssertEqual(results.filter { if case .failure = $0 { return true } else { return false } }.count, 16)
        XCTAssertEqual(try base.auditEvents(limit: 100).count, 0)
        XCTAssertGreaterThanOrEqual(writer.counts.failed, 1)
    }

    func testWithoutItsThreadEachWriteCommitsOnTheCallersThread() throws {
        let base = try SQLiteStore(path: temp.path)
        let writer = GroupCommit(store: base)
        XCTAssertEqual(
            try writer.write([.audit(AuditEvent(event: .other("x"), outcome: .accept), time: 1)]), [.written])
        XCTAssertEqual(try base.auditEvents().count, 1)
    }

    func testALoneRequestCommitsOnItsOwnThreadWhenTheWriterIsIdle() throws {
        let base = try SQLiteStore(path: temp.path)
        let store = CountingStoreAdapter(CountingStore(base))
        let writer = GroupCommit(store: store)
        XCTAssertNil(
            writer.commitAlone([.audit(AuditEvent(event: .other("x"), outcome: .accept), time: 1)]),
            "without its thread the writer takes nothing alone")
        XCTAssertTrue(writer.start())
        let result = writer.commitAlone([.audit(AuditEvent(event: .login, outcome: .accept), time: 2)])
        XCTAssertEqual(try result?.get(), [.written])
        // Durable on return: another connection reads it before the writer stops.
        XCTAssertEqual(try SQLiteStore(path: temp.path).auditEvents().map(\.event.name), ["login"])
        XCTAssertEqual(store.inner.threads.count, 1)
        XCTAssertTrue(
            store.inner.threads.allSatisfy { pthread_equal($0, pthread_self()) != 0 },
            "committed on the caller's thread")
        writer.stop()
        XCTAssertNil(
            writer.commitAlone([.audit(AuditEvent(event: .other("y"), outcome: .accept), time: 3)]),
            "a stopped writer takes nothing alone")
        XCTAssertEqual(writer.counts.batches, 1)
    }

    func testWhileABatchCommitsALoneRequestQueuesAndNoTwoCommitsOverlap() throws {
        let base = try SQLiteStore(path: temp.path)
        let store = CountingStoreAdapter(CountingStore(base))
        store.inner.firstDelay = 300_000
        let writer = GroupCommit(store: store)
        XCTAssertTrue(writer.start())
        let done = ResultBox(count: 1)
        writer.submit([.audit(AuditEvent(event: .other("first"), outcome: .accept), time: 1)]) { done.set(0, $0) }
        // The writer is committing the first batch (300 ms): the lone path must say no.
        var refused = false
        for _ in 0..<100 where !refused {
            usleep(2_000)
            refused = writer.commitAlone([.audit(AuditEvent(event: .other("lone"), outcome: .accept), time: 2)]) == nil
        }
        XCTAssertTrue(refused, "commitAlone while a batch commits")
        // Requests that queue meanwhile, and lone ones afterwards, all commit, one at a time.
        let results = concurrentWrites(writer, count: 16)
        var lone: Result<[WriteOutcome], StoreError>?
        for _ in 0..<200 where lone == nil {
            lone = writer.commitAlone([.audit(AuditEvent(event: .other("after"), outcome: .accept), time: 3)])
            if lone == nil { usleep(5_000) }
        }
        writer.stop()
        XCTAssertEqual(try done.all[0].get(), [.written])
        XCTAssertEqual(results.filter { (try? $0.get()) == [.written] }.count, 16)
        XCTAssertEqual(try lone?.get(), [.written])
        XCTAssertEqual(store.inner.mostAtOnce, 1, "two commits ran at once")
        XCTAssertEqual(try base.auditEvents(limit: 100).filter { $0.event != .other("lone") }.count, 18)
    }

    func testAFailedLoneCommitIsAFailureNotAnAccept() throws {
        let base = try SQLiteStore(path: temp.path)
        let store = CountingStoreAdapter(CountingStore(base))
        store.inner.failing = true
        let writer = GroupCommit(store: store)
        XCTAssertTrue(writer.start())
        let result = writer.commitAlone([.audit(AuditEvent(event: .login, outcome: .accept), time: 1)])
        writer.stop()
        guard case let .failure(error)? = result else {
            return XCTFail("expected a failure, got \(String(describing: result))")
        }
        XCTAssertEqual(error.message, "database or disk is full")
        XCTAssertEqual(try base.auditEvents().count, 0)
        XCTAssertEqual(writer.counts.failed, 1)
    }

    func testPeriodicItemsJoinABatch() throws {
        let base = try SQLiteStore(path: temp.path)
        let counter = RefusalCounter(window: 300)
        let writer = GroupCommit(store: base, periodic: { counter.drain() })
        for _ in 0..<500 { counter.add(peer: "10.0.0.7", reason: .rateLimited, now: 1000) }
        XCTAssertTrue(writer.start())
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, try base.auditEvents().isEmpty { usleep(50_000) }
        writer.stop()
        let rows = try base.auditRecords(AuditFilter(limit: 10))
        XCTAssertEqual(
            rows.map { "\($0.time) \($0.event.event) \($0.event.peer ?? "-") \($0.event.count)" },
            ["900 refusals 10.0.0.7 500"])
    }
}

/// Results written by concurrent threads.
///
/// `@unchecked Sendable`: `values` only under `lock`.
final class ResultBox: @unchecked Sendable {
    private let lock = Lock()
    private var values: [Result<[WriteOutcome], StoreError>?]

    init(count: Int) { values = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ value: Result<[WriteOutcome], StoreError>) { lock.withLock { values[i] = value } }

    var all: [Result<[WriteOutcome], StoreError>] {
        lock.withLock { values.map { $0 ?? .failure(StoreError("no result")) } }
    }
}

/// `CountingStore` as an `AuthStorage`: every call but `commit` goes to the SQLite store.
///
/// `@unchecked Sendable`: adds one `let` to `ForwardingStore`.
final class CountingStoreAdapter: ForwardingStore, @unchecked Sendable {
    let inner: CountingStore

    init(_ inner: CountingStore) {
        self.inner = inner
        super.init(inner.base)
    }

    override func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] { try inner.commit(items) }
}

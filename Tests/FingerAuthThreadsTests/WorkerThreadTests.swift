import FingerAuthThreads
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A value several threads may write, under a mutex.
///
/// `@unchecked Sendable`: every access to `value` holds `lock`.
final class Shared<Value>: @unchecked Sendable {
    private var value: Value
    private var lock = pthread_mutex_t()

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(&lock, nil)
    }

    deinit { pthread_mutex_destroy(&lock) }

    func change(_ body: (inout Value) -> Void) {
        pthread_mutex_lock(&lock)
        body(&value)
        pthread_mutex_unlock(&lock)
    }

    var current: Value {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        return value
    }
}

/// WorkerThread as fingerauthd's writer and pruner use it: a closure on a thread of its own,
/// done when `join` returns.
final class WorkerThreadTests: XCTestCase {
    func testTheClosureHasRunWhenJoinReturns() throws {
        let ran = Shared(false)
        let thread = try WorkerThread.start { ran.change { $0 = true } }.get()
        thread.join()
        XCTAssertTrue(ran.current)
    }

    func testTheClosureRunsOnAnotherThread() throws {
        let caller = pthread_self()
        let same = Shared<Bool?>(nil)
        let thread = try WorkerThread.start { same.change { $0 = pthread_equal(pthread_self(), caller) != 0 } }.get()
        thread.join()
        XCTAssertEqual(same.current, false)
    }

    func testJoinWaitsForAClosureThatTakesItsTime() throws {
        let finished = Shared(false)
        let thread = try WorkerThread.start {
            usleep(100_000)
            finished.change { $0 = true }
        }.get()
        XCTAssertFalse(finished.current, "the thread is still sleeping")
        thread.join()
        XCTAssertTrue(finished.current)
    }

    func testManyThreadsRunAtOnceAndEachRunsOnce() throws {
        let count = Shared(0)
        let threads = try (0..<16).map { _ in try WorkerThread.start { count.change { $0 += 1 } }.get() }
        for thread in threads { thread.join() }
        XCTAssertEqual(count.current, 16)
    }

    func testTheClosureIsReleasedAfterItRan() throws {
        final class Token: Sendable {}
        weak var weakToken: Token?
        do {
            let token = Token()
            weakToken = token
            let thread = try WorkerThread.start { _ = token }.get()
            thread.join()
        }
        XCTAssertNil(weakToken, "the thread's box released what the closure captured")
    }
}

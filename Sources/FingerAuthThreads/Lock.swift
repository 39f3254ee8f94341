import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex owned by this object (pthread_mutex_init/destroy): the writer
/// connection, the group commit's queue, pools and counters take turns behind one.
///
/// `@unchecked Sendable`: the mutex is what makes other types safe to share; pthread
/// mutexes are made for it.
package final class Lock: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// pthread_mutex_lock; every `lock()` is followed by one `unlock()` on the same thread.
    package func lock() { pthread_mutex_lock(mutex) }

    /// pthread_mutex_unlock.
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the mutex held. Inlinable, so that callers in other modules get it
    /// specialised (a generic call looks its type metadata up at run time).
    @inlinable
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A condition variable on CLOCK_MONOTONIC (pthread_cond_init with pthread_condattr_setclock),
/// owned by this object and used with a `Lock`: waits that a change of the wall clock
/// cannot stretch or cut short.
///
/// `@unchecked Sendable`: a pthread condition variable, shared by design and always used
/// with its `Lock` held.
package final class Condition: @unchecked Sendable {
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
    }

    /// Waits, with `lock` held by the caller, until signalled or until `deadline`
    /// (pthread_cond_timedwait); false when the deadline passed. Wake-ups may be spurious:
    /// callers wait in a loop on their own condition.
    @discardableResult
    package func wait(_ lock: Lock, until deadline: Deadline) -> Bool {
        var until = timespec()
        until.tv_sec = Int(deadline.milliseconds / 1000)
        until.tv_nsec = Int(deadline.milliseconds % 1000) * 1_000_000
        return pthread_cond_timedwait(condition, lock.mutex, &until) != ETIMEDOUT
    }

    /// Wakes one waiter (pthread_cond_signal).
    package func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter (pthread_cond_broadcast).
    package func broadcast() { pthread_cond_broadcast(condition) }
}

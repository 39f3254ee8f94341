#if canImport(Glibc)
import Glibc
#endif

/// At most `capacity` connections of one kind, each lent to one thread at a time. They are
/// opened on demand with `open`; one that `usable` says is broken (a PostgreSQL server that
/// went away) is closed when it comes back, so the next borrower opens a fresh one. A
/// borrower waits at most `waitSeconds` for a free connection, then gets an error (the
/// request answers 503).
final class ConnectionPool<Connection: AnyObject>: @unchecked Sendable {
    let capacity: Int
    let waitSeconds: Int
    let name: String
    private let open: () throws(StoreError) -> Connection
    private let usable: (Connection) -> Bool
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let freed: UnsafeMutablePointer<pthread_cond_t>
    private var idle: [Connection] = []
    /// Connections lent out, idle, or being opened.
    private var count = 0
    private var closed = false

    init(name: String, capacity: Int, waitSeconds: Int = 5, open: @escaping () throws(StoreError) -> Connection,
         usable: @escaping (Connection) -> Bool = { _ in true }) {
        self.name = name
        self.capacity = max(1, capacity)
        self.waitSeconds = waitSeconds
        self.open = open
        self.usable = usable
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        freed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        freed.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(freed, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        idle = []
        pthread_cond_destroy(freed)
        freed.deinitialize(count: 1)
        freed.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Drops the idle connections and refuses new borrowers; lent ones close on return.
    func close() {
        pthread_mutex_lock(mutex)
        closed = true
        count -= idle.count
        idle = []
        pthread_cond_broadcast(freed)
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` on a borrowed connection. When the connection broke during `body` (the
    /// server restarted since it was opened), it is dropped and, with `retry`, `body` runs
    /// once more on a fresh one: only for bodies that are safe to repeat (reads).
    func withConnection<T>(retry: Bool = true, _ body: (Connection) throws(StoreError) -> T) throws(StoreError) -> T {
        let connection = try borrow()
        do {
            let value = try body(connection)
            giveBack(connection)
            return value
        } catch {
            let broken = !usable(connection)
            giveBack(connection)
            guard broken, retry else { throw error }
        }
        let fresh = try borrow()
        defer { giveBack(fresh) }
        return try body(fresh)
    }

    private func borrow() throws(StoreError) -> Connection {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += waitSeconds
        pthread_mutex_lock(mutex)
        while true {
            if closed {
                pthread_mutex_unlock(mutex)
                throw StoreError("\(name): store closed")
            }
            if let connection = idle.popLast() {
                pthread_mutex_unlock(mutex)
                if usable(connection) { return connection }
                pthread_mutex_lock(mutex)
                count -= 1
                continue
            }
            if count < capacity {
                count += 1
                pthread_mutex_unlock(mutex)
                do {
                    return try open()
                } catch {
                    pthread_mutex_lock(mutex)
                    count -= 1
                    pthread_cond_signal(freed)
                    pthread_mutex_unlock(mutex)
                    throw error
                }
            }
            if pthread_cond_timedwait(freed, mutex, &deadline) == ETIMEDOUT {
                pthread_mutex_unlock(mutex)
                throw StoreError("\(name): no free connection within \(waitSeconds) s (pool of \(capacity))")
            }
        }
    }

    private func giveBack(_ connection: Connection) {
        pthread_mutex_lock(mutex)
        if usable(connection) && !closed {
            idle.append(connection)
        } else {
            count -= 1
        }
        pthread_cond_signal(freed)
        pthread_mutex_unlock(mutex)
    }
}

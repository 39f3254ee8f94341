#if canImport(Glibc)
import Glibc
#endif

/// At most `capacity` PostgreSQL connections, lent to one thread at a time. Connections
/// are opened on demand; one whose server went away (PQstatus CONNECTION_BAD) is closed
/// when it comes back, so the next borrower opens a fresh one: after a database restart
/// the pool reconnects by itself. A borrower waits at most `waitSeconds` for a free
/// connection, then gets an error (the request answers 503).
final class PostgresPool: @unchecked Sendable {
    let url: String
    let capacity: Int
    let statementTimeoutMilliseconds: Int
    let waitSeconds: Int

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let freed: UnsafeMutablePointer<pthread_cond_t>
    private var idle: [PostgresConnection] = []
    /// Connections lent out, idle, or being opened.
    private var count = 0
    private var closed = false

    init(url: String, capacity: Int, statementTimeoutMilliseconds: Int, waitSeconds: Int = 5) {
        self.url = url
        self.capacity = max(1, capacity)
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
        self.waitSeconds = waitSeconds
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        freed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        freed.initialize(to: pthread_cond_t())
        pthread_cond_init(freed, nil)
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

    /// Closes the idle connections and refuses new borrowers; lent ones close on return.
    func close() {
        pthread_mutex_lock(mutex)
        closed = true
        count -= idle.count
        idle = []
        pthread_cond_broadcast(freed)
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` on a borrowed connection. When the connection broke during `body`
    /// (the server restarted since it was opened), it is dropped and `body` runs once
    /// more on a fresh connection: every statement of the store is safe to repeat (a
    /// repeated jti claim finds its own row and refuses, failing closed).
    func withConnection<T>(_ body: (PostgresConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        let connection = try borrow()
        do {
            let value = try body(connection)
            giveBack(connection)
            return value
        } catch {
            let broken = !connection.isUsable
            giveBack(connection)
            guard broken else { throw error }
        }
        let fresh = try borrow()
        defer { giveBack(fresh) }
        return try body(fresh)
    }

    private func borrow() throws(StoreError) -> PostgresConnection {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += waitSeconds
        pthread_mutex_lock(mutex)
        while true {
            if closed {
                pthread_mutex_unlock(mutex)
                throw StoreError("postgresql: store closed")
            }
            if let connection = idle.popLast() {
                pthread_mutex_unlock(mutex)
                if connection.isUsable { return connection }
                pthread_mutex_lock(mutex)
                count -= 1
                continue
            }
            if count < capacity {
                count += 1
                pthread_mutex_unlock(mutex)
                do {
                    return try PostgresConnection(url: url, statementTimeoutMilliseconds: statementTimeoutMilliseconds)
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
                throw StoreError("postgresql: no free connection within \(waitSeconds) s (pool of \(capacity))")
            }
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        pthread_mutex_lock(mutex)
        if connection.isUsable && !closed {
            idle.append(connection)
        } else {
            count -= 1
        }
        pthread_cond_signal(freed)
        pthread_mutex_unlock(mutex)
    }
}

import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

/// At most `capacity` connections of one kind, each lent to one thread at a time. They are
/// opened on demand with `open`; one that `usable` says is broken (a PostgreSQL server that
/// went away) is closed when it comes back, so the next borrower opens a fresh one. A
/// borrower waits at most `waitSeconds` for a free connection, then gets an error (the
/// request answers 503).
///
/// `@unchecked Sendable`: `idle`, `count` and `closed` change only under `lock`; a connection
/// lent out belongs to its borrower alone until it comes back; `open` and `usable` are
/// set in `init` and called on one connection at a time.
package final class ConnectionPool<Connection: AnyObject>: @unchecked Sendable {
    package let capacity: Int
    package let waitSeconds: Int
    package let name: String
    private let open: () throws(StoreError) -> Connection
    private let usable: (Connection) -> Bool
    private let lock = Lock()
    private let freed = Condition()
    private var idle: [Connection] = []
    /// Connections lent out, idle, or being opened.
    private var count = 0
    private var closed = false

    package init(
        name: String, capacity: Int, waitSeconds: Int = 5, open: @escaping () throws(StoreError) -> Connection,
        usable: @escaping (Connection) -> Bool = { _ in true }
    ) {
        self.name = name
        self.capacity = max(1, capacity)
        self.waitSeconds = waitSeconds
        self.open = open
        self.usable = usable
    }

    /// Drops the idle connections and refuses new borrowers; lent ones close on return.
    package func close() {
        lock.withLock {
            closed = true
            count -= idle.count
            idle = []
            freed.broadcast()
        }
    }

    /// Runs `body` on a borrowed connection. When the connection broke during `body` (the
    /// server restarted since it was opened), it is dropped and, with `retry`, `body` runs
    /// once more on a fresh one: only for bodies that are safe to repeat (reads).
    package func withConnection<T>(retry: Bool = true, _ body: (Connection) throws(StoreError) -> T) throws(StoreError)
        -> T
    {
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
        let deadline = Deadline.after(seconds: Double(waitSeconds))
        lock.lock()
        while true {
            if closed {
                lock.unlock()
                throw StoreError("\(name): store closed")
            }
            if let connection = idle.popLast() {
                lock.unlock()
                if usable(connection) { return connection }
                lock.lock()
                count -= 1
                continue
            }
            if count < capacity {
                count += 1
                lock.unlock()
                do {
                    return try open()
                } catch {
                    lock.withLock {
                        count -= 1
                        freed.signal()
                    }
                    throw error
                }
            }
            if !freed.wait(lock, until: deadline) && deadline.hasPassed {
                lock.unlock()
                throw StoreError("\(name): no free connection within \(waitSeconds) s (pool of \(capacity))")
            }
        }
    }

    private func giveBack(_ connection: Connection) {
        lock.withLock {
            if usable(connection) && !closed {
                idle.append(connection)
            } else {
                count -= 1
            }
            freed.signal()
        }
    }
}

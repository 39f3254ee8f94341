import FingerAuthCore
import FingerAuthDomain

/// The registry (every storage port) in one PostgreSQL database that several fingerauthd
/// instances share: a bounded pool of libpq connections, prepared statements with every
/// value a parameter, a statement timeout and synchronous commit on every session. The
/// request path's batches run as one pipeline each (`commit`): one round trip and one
/// durable commit for all the logins in it; the jti claim is one atomic statement, so two
/// instances can never both accept one token. Every failure throws; the service answers
/// 503 then, never 2xx. The queries are the shared SQL layer's (`SQLRegistry`).
///
/// `@unchecked Sendable`: every connection is lent to one thread at a time by `pool`, which
/// holds its own lock; nothing else changes after `init`.
package final class PostgresStore: SQLRegistry, @unchecked Sendable {
    let pool: ConnectionPool<PostgresConnection>
    let dialect = SQLDialect.postgres

    /// Connects to `url` (refused when it reaches another machine without an explicit
    /// `sslmode`), creates or migrates the schema (`PostgresSchema`), and keeps up to
    /// `connections` connections open; every statement is cut off after `statementTimeout`
    /// milliseconds.
    package init(url: String, connections: Int, statementTimeout: Int = 5000) throws(StoreError) {
        if let problem = PostgresURL.transportProblem(url) { throw StoreError(problem) }
        pool = ConnectionPool(name: "postgresql", capacity: connections) {
            () throws(StoreError) -> PostgresConnection in
            try PostgresConnection(url: url, statementTimeoutMilliseconds: statementTimeout)
        } usable: {
            $0.isUsable
        }
        try pool.withConnection { (connection) throws(StoreError) in try PostgresSchema.migrate(connection) }
    }

    package func close() { pool.close() }

    /// `postgresql synchronous_commit=on fsync=on`, as the server reports them.
    package func durability() throws(StoreError) -> String {
        try pool.withConnection { (db) throws(StoreError) -> String in
            let result = try db.query("SELECT current_setting('synchronous_commit'), current_setting('fsync')")
            return "postgresql synchronous_commit=\(result.text(0, 0) ?? "?") fsync=\(result.text(0, 1) ?? "?")"
        }
    }

    /// Runs `body` on a pooled connection; once more on a fresh one when the server went
    /// away meanwhile (reads are safe to repeat).
    func read<T>(_ body: (PostgresConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        try pool.withConnection(body)
    }

    /// One transaction on one connection; not repeated on a fresh connection when the
    /// server went away mid-way (it may have committed: the caller answers 503).
    func write<T>(_ body: (PostgresConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        try pool.withConnection(retry: false) { (db) throws(StoreError) -> T in
            try db.execute("BEGIN")
            do throws(StoreError) {
                let value = try body(db)
                try db.execute("COMMIT")
                return value
            } catch {
                _ = try? db.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// One statement in its own implicit transaction (pruning's batches, which skip the rows
    /// another instance's pruner holds).
    func autocommit<T>(_ body: (PostgresConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        try pool.withConnection(body)
    }
}

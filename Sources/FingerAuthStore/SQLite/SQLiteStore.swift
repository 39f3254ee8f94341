import FingerAuthCore
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

/// The registry (every storage port) in one SQLite database: the embedded default.
///
/// One writer connection behind a mutex takes every write — the request path's batches
/// (`commit`) and the admin commands' changes — in WAL mode with `synchronous = FULL`, so a
/// commit returns only once the write-ahead log is on disk. Reads (key lookups, host
/// tokens, audit queries) use a small pool of read-only connections that WAL lets run
/// beside the writer. Statements are prepared once per connection; every value is a bound
/// parameter. The queries are the shared SQL layer's (`SQLRegistry`).
///
/// `@unchecked Sendable`: request threads, the writer and the pruner share it. The writer
/// connection is used only under `writeLock`; each read-only connection is lent to one
/// thread at a time by `readers`; the rest is set in `init`.
package final class SQLiteStore: SQLRegistry, @unchecked Sendable {
    let writeLock = Lock()
    let writer: SQLiteDatabase
    let readers: ConnectionPool<SQLiteDatabase>
    let path: String
    let dialect = SQLDialect.sqlite

    /// Opens (creating if needed) the database at `path`, brings its schema up to date, and
    /// keeps up to `readers` read-only connections for lookups.
    package init(path: String, readers: Int = 4) throws(StoreError) {
        self.path = path
        writer = try SQLiteDatabase(path: path)
        try writer.execute("PRAGMA busy_timeout = 5000")
        try writer.execute("PRAGMA foreign_keys = ON")
        try writer.execute("PRAGMA journal_mode = WAL")
        try writer.execute("PRAGMA synchronous = FULL")
        try SQLiteSchema.migrate(writer)
        self.readers = ConnectionPool(name: "sqlite", capacity: readers) { () throws(StoreError) -> SQLiteDatabase in
            let db = try SQLiteDatabase(path: path, readOnly: true)
            try db.execute("PRAGMA busy_timeout = 5000")
            return db
        }
    }

    /// Closes every connection; later calls throw.
    package func close() {
        readers.close()
        writeLock.withLock { writer.close() }
    }

    /// `sqlite <journal mode> synchronous=<level>`, read back from the writer connection.
    package func durability() throws(StoreError) -> String {
        try writeLock.withLock { () throws(StoreError) -> String in
            let mode = try writer.prepare("PRAGMA journal_mode")
            let journal = try mode.step() ? (mode.text(0) ?? "?") : "?"
            let level = try writer.integer("PRAGMA synchronous") ?? -1
            let names: [Int64: String] = [0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"]
            return "sqlite \(journal.uppercased()) synchronous=\(names[level] ?? String(level))"
        }
    }

    /// Runs `body` on a pooled read-only connection.
    func read<T>(_ body: (SQLiteDatabase) throws(StoreError) -> T) throws(StoreError) -> T {
        try readers.withConnection(body)
    }

    /// Runs `body` in one `BEGIN IMMEDIATE … COMMIT` transaction on the writer connection.
    func write<T>(_ body: (SQLiteDatabase) throws(StoreError) -> T) throws(StoreError) -> T {
        try writeLock.withLock { () throws(StoreError) -> T in
            try writer.transaction { () throws(StoreError) -> T in try body(writer) }
        }
    }

    /// A transaction on the writer like any other: between two, a login's batch commits.
    func autocommit<T>(_ body: (SQLiteDatabase) throws(StoreError) -> T) throws(StoreError) -> T {
        try write(body)
    }
}

import CSQLite

/// A storage failure. The text comes from SQLite (sqlite3_errmsg) and names no secret:
/// every value reaches SQLite as a bound parameter, never inside the SQL text.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// One SQLite connection (sqlite3_open_v2), owned by this object and closed in `close()`
/// or deinit (sqlite3_close_v2). Not thread-safe by itself: `AuthStore` serializes it.
final class SQLiteDatabase {
    private(set) var handle: OpaquePointer?

    /// Opens or creates the database at `path`; a symbolic link is refused
    /// (SQLITE_OPEN_NOFOLLOW).
    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let text = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close_v2(db) }
            throw StoreError("\(path): cannot open database: \(text)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit { close() }

    /// Closes the connection; later calls fail with "database closed".
    func close() {
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs fixed SQL text without parameters (schema, pragmas) with sqlite3_exec.
    func execute(_ sql: String) throws(StoreError) {
        guard let handle else { throw StoreError("database closed") }
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard rc == SQLITE_OK else {
            throw StoreError(message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc)))
        }
    }

    /// Prepares `sql` (sqlite3_prepare_v2); values go in with the statement's `bind`.
    func prepare(_ sql: String) throws(StoreError) -> SQLiteStatement {
        try SQLiteStatement(database: self, sql: sql)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE (sqlite3_changes).
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// SQLite's text for the last error on this connection.
    var lastError: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "database closed" }
}

/// One prepared statement (sqlite3_stmt), finalized in deinit. It keeps its database alive.
final class SQLiteStatement {
    private let database: SQLiteDatabase
    private let handle: OpaquePointer

    fileprivate init(database: SQLiteDatabase, sql: String) throws(StoreError) {
        guard let db = database.handle else { throw StoreError("database closed") }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw StoreError(database.lastError)
        }
        self.database = database
        self.handle = stmt
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds text (or NULL) to the 1-based parameter `index` (copied by SQLite).
    func bind(_ index: Int32, _ text: String?) throws(StoreError) {
        let rc: Int32
        if let text {
            let length = Int32(clamping: text.utf8.count)
            rc = text.withCString { fa_sqlite3_bind_text(handle, index, $0, length) }
        } else {
            rc = sqlite3_bind_null(handle, index)
        }
        guard rc == SQLITE_OK else { throw StoreError(database.lastError) }
    }

    /// Binds an integer (or NULL) to the 1-based parameter `index`.
    func bind(_ index: Int32, _ value: Int64?) throws(StoreError) {
        let rc = value.map { sqlite3_bind_int64(handle, index, $0) } ?? sqlite3_bind_null(handle, index)
        guard rc == SQLITE_OK else { throw StoreError(database.lastError) }
    }

    /// Advances: true when a row is available, false when the statement is done.
    func step() throws(StoreError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw StoreError(database.lastError)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(StoreError) {
        while try step() {}
    }

    /// Column `index` (0-based) of the current row as text; nil for NULL.
    func text(_ index: Int32) -> String? {
        guard let raw = sqlite3_column_text(handle, index) else { return nil }
        return String(cString: raw)
    }

    /// Column `index` (0-based) of the current row as an integer; nil for NULL.
    func int64(_ index: Int32) -> Int64? {
        sqlite3_column_type(handle, index) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, index)
    }
}

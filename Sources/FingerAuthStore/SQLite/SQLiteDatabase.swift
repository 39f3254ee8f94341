import CSQLite
import FingerAuthDomain

/// One SQLite connection (sqlite3_open_v2), owned by this object and closed in `close()`
/// or deinit (sqlite3_close_v2), with its prepared statements cached by SQL text. Not
/// thread-safe: one thread uses it at a time (the store's writer mutex or reader pool).
final class SQLiteDatabase {
    private(set) var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens or creates the database at `path`; a symbolic link is refused
    /// (SQLITE_OPEN_NOFOLLOW). `readOnly` connections never write.
    init(path: String, readOnly: Bool = false) throws(StoreError) {
        var db: OpaquePointer?
        let mode = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let flags = mode | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
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

    /// Finalizes the cached statements and closes the connection; later calls fail with
    /// "database closed".
    func close() {
        statements = [:]
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

    /// Prepares `sql` once (sqlite3_prepare_v2) and reuses it; the statement is reset and
    /// its bindings cleared when `body` returns, so no cursor outlives the call.
    func withStatement<T>(_ sql: String, _ body: (SQLiteStatement) throws(StoreError) -> T) throws(StoreError) -> T {
        let statement: SQLiteStatement
        if let known = statements[sql] {
            statement = known
        } else {
            statement = try SQLiteStatement(database: self, sql: sql)
            statements[sql] = statement
        }
        defer { statement.reset() }
        return try body(statement)
    }

    /// A statement of its own, finalized when released (for one-off SQL such as
    /// migrations, which must not stay prepared).
    func prepare(_ sql: String) throws(StoreError) -> SQLiteStatement {
        try SQLiteStatement(database: self, sql: sql)
    }

    /// One integer from a statement without parameters (`PRAGMA synchronous`, …).
    func integer(_ sql: String) throws(StoreError) -> Int64? {
        let stmt = try prepare(sql)
        return try stmt.step() ? stmt.int64(0) : nil
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE (sqlite3_changes).
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// SQLite's text for the last error on this connection.
    var lastError: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "database closed" }

    /// Runs `body` in one `BEGIN IMMEDIATE … COMMIT` transaction; any error rolls back and
    /// is rethrown (a failed COMMIT too, e.g. SQLITE_FULL: nothing of it is kept).
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if let handle, sqlite3_get_autocommit(handle) == 0 { try? execute("ROLLBACK") }
            throw error
        }
    }
}

/// One prepared statement (sqlite3_stmt), finalized in deinit; while stepping, the current
/// row (`SQLRow`).
final class SQLiteStatement: SQLRow {
    private let handle: OpaquePointer

    fileprivate init(database: SQLiteDatabase, sql: String) throws(StoreError) {
        guard let db = database.handle else { throw StoreError("database closed") }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw StoreError(database.lastError)
        }
        self.handle = stmt
    }

    deinit { sqlite3_finalize(handle) }

    /// SQLite's text for the last error on this statement's connection.
    private var lastError: String {
        sqlite3_db_handle(handle).map { String(cString: sqlite3_errmsg($0)) } ?? "database closed"
    }

    /// sqlite3_reset + sqlite3_clear_bindings: ready for the next use, no read held.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds text (or NULL) to the 1-based parameter `index` (copied by SQLite).
    func bind(_ index: Int32, _ text: String?) throws(StoreError) {
        let rc: Int32
        if let text {
            var copy = text
            rc = copy.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    // SQLITE_TRANSIENT copies; an empty string still needs a valid pointer.
                    guard let base = chars.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, nil) }
                    return fa_sqlite3_bind_text(handle, index, base, Int32(clamping: chars.count))
                }
            }
        } else {
            rc = sqlite3_bind_null(handle, index)
        }
        guard rc == SQLITE_OK else { throw StoreError(lastError) }
    }

    /// Binds an integer (or NULL) to the 1-based parameter `index`.
    func bind(_ index: Int32, _ value: Int64?) throws(StoreError) {
        let rc = value.map { sqlite3_bind_int64(handle, index, $0) } ?? sqlite3_bind_null(handle, index)
        guard rc == SQLITE_OK else { throw StoreError(lastError) }
    }

    /// Binds a boolean as 0 or 1.
    func bind(_ index: Int32, _ value: Bool) throws(StoreError) {
        try bind(index, Int64(value ? 1 : 0))
    }

    /// Binds `value` in SQLite's own type.
    func bind(_ index: Int32, _ value: SQLValue) throws(StoreError) {
        switch value {
        case let .text(text): try bind(index, text)
        case let .integer(integer): try bind(index, integer)
        case let .boolean(boolean): try bind(index, boolean)
        }
    }

    /// Columns of each row (sqlite3_column_count).
    var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// Advances: true when a row is available, false when the statement is done.
    func step() throws(StoreError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw StoreError(lastError)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(StoreError) {
        while try step() {}
    }

    /// Column `column` (0-based) of the current row as text; nil for NULL.
    func text(_ column: Int) -> String? {
        let index = Int32(truncatingIfNeeded: column)
        guard let raw = sqlite3_column_text(handle, index) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: raw, count: count), as: UTF8.self)
    }

    /// Column `column` (0-based) of the current row as an integer; nil for NULL.
    func int64(_ column: Int) -> Int64? {
        let index = Int32(truncatingIfNeeded: column)
        return sqlite3_column_type(handle, index) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, index)
    }

    /// Column `column` (0-based) of the current row as a boolean: an integer other than 0.
    func bool(_ column: Int) -> Bool? {
        int64(column).map { $0 != 0 }
    }
}

/// The shared SQL layer on SQLite: `?N` parameters are SQLite's own.
extension SQLiteDatabase: SQLConnection {
    var dialect: SQLDialect { .sqlite }

    func run(_ statement: SQLStatement, row: (SQLiteStatement) throws(StoreError) -> Void) throws(StoreError) -> Int {
        try withStatement(statement.sql) { (stmt) throws(StoreError) -> Int in
            for (index, value) in statement.values.enumerated() { try stmt.bind(Int32(index + 1), value) }
            while try stmt.step() { try row(stmt) }
            return changes
        }
    }

    /// Nothing to take: the store has one writer connection, and `BEGIN IMMEDIATE` makes
    /// every other process's writer wait.
    func serialize(_ scope: LockScope) throws(StoreError) {}
}

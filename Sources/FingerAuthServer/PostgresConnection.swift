import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// A value for a statement parameter; sent in libpq's text format.
enum PostgresValue {
    case text(String?)
    case integer(Int64?)

    var wire: String? {
        switch self {
        case let .text(value): return value
        case let .integer(value): return value.map { String($0) }
        }
    }
}

/// One query result (PGresult), owned by this object and freed in deinit (PQclear).
final class PostgresResult {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    var rows: Int { Int(PQntuples(handle)) }

    /// Rows an INSERT, UPDATE or DELETE touched (PQcmdTuples).
    var affected: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    /// Column `column` of row `row` as text; nil for NULL.
    func text(_ row: Int, _ column: Int32) -> String? {
        guard PQgetisnull(handle, Int32(row), column) == 0 else { return nil }
        guard let value = PQgetvalue(handle, Int32(row), column) else { return nil }
        return String(cString: value)
    }

    /// Column `column` of row `row` as an integer; nil for NULL.
    func int64(_ row: Int, _ column: Int32) -> Int64? {
        text(row, column).flatMap { Int64($0) }
    }
}

/// One libpq connection (PQconnectdbParams), owned by this object and closed in deinit
/// (PQfinish). Statements are prepared once per connection (PQprepare) and run with
/// PQexecPrepared; every value is a parameter, never part of the SQL text. Not
/// thread-safe: the pool lends it to one thread at a time.
final class PostgresConnection {
    private let handle: OpaquePointer
    private var prepared: [String: String] = [:]

    /// Connects to `url` (a `postgresql://` URL or any libpq connection string). Our
    /// defaults come before the URL, so that the URL's own parameters win; the
    /// statement timeout is set on the session afterwards.
    init(url: String, statementTimeoutMilliseconds: Int) throws(StoreError) {
        let keywords = ["connect_timeout", "application_name", "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "dbname"]
        let values = ["3", "fingerauthd", "10", "3", "3", url]
        let connection = Self.withCStrings(keywords) { keys in
            Self.withCStrings(values) { vals in PQconnectdbParams(keys, vals, 1) }
        }
        guard let connection else { throw StoreError("postgresql: out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.clean(PQerrorMessage(connection))
            PQfinish(connection)
            throw StoreError("postgresql: cannot connect: \(message)")
        }
        handle = connection
        try execute("SET statement_timeout = \(max(1, statementTimeoutMilliseconds))")
        try execute("SET idle_in_transaction_session_timeout = \(max(1, statementTimeoutMilliseconds) * 2)")
        try execute("SET lock_timeout = \(max(1, statementTimeoutMilliseconds))")
    }

    deinit { PQfinish(handle) }

    /// False once the server went away (PQstatus CONNECTION_BAD); the pool drops it then.
    var isUsable: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs fixed SQL text without parameters (schema, session settings) with PQexec.
    @discardableResult
    func execute(_ sql: String) throws(StoreError) -> PostgresResult {
        try check(PQexec(handle, sql))
    }

    /// Prepares `sql` on first use and runs it with `parameters` ($1, $2, … in order).
    @discardableResult
    func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(StoreError) -> PostgresResult {
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "fa_\(prepared.count + 1)"
            _ = try check(PQprepare(handle, name, sql, Int32(parameters.count), nil))
            prepared[sql] = name
        }
        let wire = parameters.map(\.wire)
        let raw: [UnsafeMutablePointer<CChar>?] = wire.map { $0.flatMap { strdup($0) } }
        defer { raw.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = raw.map { $0.map { UnsafePointer($0) } }
        let result = pointers.withUnsafeBufferPointer { buffer in
            PQexecPrepared(handle, name, Int32(parameters.count), buffer.baseAddress, nil, nil, 0)
        }
        return try check(result)
    }

    /// Turns a failed result into a StoreError (PQresultErrorMessage); the result is freed.
    private func check(_ result: OpaquePointer?) throws(StoreError) -> PostgresResult {
        guard let result else { throw StoreError("postgresql: \(Self.clean(PQerrorMessage(handle)))") }
        let owned = PostgresResult(result)
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return owned
        default:
            throw StoreError("postgresql: \(Self.clean(PQresultErrorMessage(result)))")
        }
    }

    /// libpq's message on one line.
    static func clean(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        let text = String(cString: message)
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .map { String($0.drop(while: { $0 == "\t" || $0 == " " })) }.joined(separator: "; ")
        return line.isEmpty ? "unknown error" : line
    }

    /// Runs `body` with a NULL-terminated array of C copies of `strings` (freed after).
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T?) -> T? {
        let raw: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { raw.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = raw.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            return body(base)
        }
    }
}

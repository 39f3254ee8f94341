import CPostgres
import FingerAuthDomain

#if canImport(Glibc)
import Glibc
#endif

extension SQLValue {
    /// The value in libpq's text format; nil for NULL.
    var wire: String? {
        switch self {
        case let .text(value): return value
        case let .integer(value): return value.map { String($0) }
        case let .boolean(value): return value ? "true" : "false"
        }
    }
}

/// One query result (PGresult), owned by this object and freed in deinit (PQclear).
final class PostgresResult {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    var rows: Int { Int(PQntuples(handle)) }

    /// Columns of each row (PQnfields).
    var columns: Int { Int(PQnfields(handle)) }

    /// Rows an INSERT, UPDATE or DELETE touched (PQcmdTuples).
    var affected: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    /// Column `column` of row `row` as text; nil for NULL.
    func text(_ row: Int, _ column: Int32) -> String? {
        guard PQgetisnull(handle, Int32(row), column) == 0 else { return nil }
        guard let value = PQgetvalue(handle, Int32(row), column) else { return nil }
        let length = Int(PQgetlength(handle, Int32(row), column))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// Column `column` of row `row` as an integer; nil for NULL.
    func int64(_ row: Int, _ column: Int32) -> Int64? {
        text(row, column).flatMap { Int64($0) }
    }

    /// Column `column` of row `row` as a boolean (`t`/`f`); nil for NULL.
    func bool(_ row: Int, _ column: Int32) -> Bool? {
        text(row, column).map { $0 == "t" }
    }
}

/// One libpq connection (PQconnectdbParams), owned by this object and closed in deinit
/// (PQfinish). Statements are prepared once per connection (PQprepare) and run with
/// PQexecPrepared, or several at once in pipeline mode; every value is a parameter, never
/// part of the SQL text. Every session commits synchronously (`synchronous_commit = on`):
/// a COMMIT returns once the server's WAL is flushed. Not thread-safe: the pool lends it
/// to one thread at a time.
final class PostgresConnection {
    private let handle: OpaquePointer
    private var prepared: [String: String] = [:]
    /// Set when a pipeline ended in a state we cannot trust; the pool drops the connection.
    private var broken = false

    /// Connects to `url` (a `postgresql://` URL or any libpq connection string). Our
    /// defaults come before the URL, so that the URL's own parameters win; the session
    /// settings are made afterwards.
    init(url: String, statementTimeoutMilliseconds: Int) throws(StoreError) {
        let keywords = [
            "connect_timeout", "application_name", "keepalives_idle", "keepalives_interval",
            "keepalives_count", "dbname",
        ]
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
        let timeout = max(1, statementTimeoutMilliseconds)
        try execute("SET statement_timeout = \(timeout)")
        try execute("SET idle_in_transaction_session_timeout = \(timeout * 2)")
        try execute("SET lock_timeout = \(timeout)")
        try execute("SET synchronous_commit = on")
    }

    deinit { PQfinish(handle) }

    /// False once the server went away (PQstatus CONNECTION_BAD) or a pipeline broke.
    var isUsable: Bool { !broken && PQstatus(handle) == CONNECTION_OK }

    /// Runs fixed SQL text without parameters (schema, session settings) with PQexec.
    @discardableResult
    func execute(_ sql: String) throws(StoreError) -> PostgresResult {
        try check(PQexec(handle, sql))
    }

    /// Prepares `sql` on first use and runs it with `parameters` ($1, $2, … in order).
    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue] = []) throws(StoreError) -> PostgresResult {
        let name = try statementName(sql, parameterCount: parameters.count)
        let result = withParameters(parameters) { values in
            PQexecPrepared(handle, name, Int32(parameters.count), values, nil, nil, 0)
        }
        return try check(result)
    }

    /// Runs `statements` as one pipeline ending in one Sync: the server runs them in one
    /// implicit transaction and commits it at the Sync, so they are sent and answered in one
    /// round trip and become durable together. Any error rolls all of them back and throws.
    func pipeline(_ statements: [SQLStatement]) throws(StoreError) -> [PostgresResult] {
        var names: [String] = []
        names.reserveCapacity(statements.count)
        for statement in statements {
            names.append(try statementName(statement.sql, parameterCount: statement.values.count))
        }
        guard PQenterPipelineMode(handle) == 1 else {
            throw StoreError("postgresql: cannot enter pipeline mode: \(Self.clean(PQerrorMessage(handle)))")
        }
        var sent = 0
        for (statement, name) in zip(statements, names) {
            let ok = withParameters(statement.values) { values in
                PQsendQueryPrepared(handle, name, Int32(statement.values.count), values, nil, nil, 0) == 1
            }
            guard ok else { break }
            sent += 1
        }
        guard sent == statements.count, PQpipelineSync(handle) == 1 else {
            broken = true
            throw StoreError("postgresql: cannot send the batch: \(Self.clean(PQerrorMessage(handle)))")
        }
        var results: [PostgresResult] = []
        results.reserveCapacity(sent)
        var failure: String?
        for _ in 0..<sent {
            guard let raw = PQgetResult(handle) else {
                failure = failure ?? Self.clean(PQerrorMessage(handle))
                broken = true
                break
            }
            let result = PostgresResult(raw)
            switch PQresultStatus(raw) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                results.append(result)
            case PGRES_PIPELINE_ABORTED:
                failure = failure ?? "statement not run after an earlier error"
            default:
                failure = failure ?? Self.clean(PQresultErrorMessage(raw))
            }
            // Each statement's results end with one NULL.
            while let extra = PQgetResult(handle) { PQclear(extra) }
        }
        if !broken {
            // The Sync: the implicit transaction was committed (or rolled back) before it.
            var synced = false
            while let raw = PQgetResult(handle) {
                let status = PQresultStatus(raw)
                if status == PGRES_PIPELINE_SYNC {
                    PQclear(raw)
                    synced = true
                    break
                }
                failure = failure ?? Self.clean(PQresultErrorMessage(raw))
                PQclear(raw)
            }
            if !synced || PQexitPipelineMode(handle) != 1 { broken = true }
        }
        if broken && failure == nil { failure = "the batch ended without its sync" }
        if let failure { throw StoreError("postgresql: \(failure)") }
        return results
    }

    /// The name of `sql`'s prepared statement, preparing it on first use; the shared SQL's
    /// `?N` parameters become PostgreSQL's `$N` then (the text is looked up as written).
    private func statementName(_ sql: String, parameterCount: Int) throws(StoreError) -> String {
        if let known = prepared[sql] { return known }
        let name = "fa_\(prepared.count + 1)"
        let text = sql.utf8.contains(UInt8(ascii: "?")) ? String(sql.map { $0 == "?" ? "$" : $0 }) : sql
        _ = try check(PQprepare(handle, name, text, Int32(parameterCount), nil))
        prepared[sql] = name
        return name
    }

    /// Runs `body` with C copies of the parameters' text (NULL for SQL NULL), freed after.
    private func withParameters<T>(_ parameters: [SQLValue], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T
    {
        let raw: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.wire.flatMap { strdup($0) } }
        defer { for pointer in raw { free(pointer) } }
        let pointers: [UnsafePointer<CChar>?] = raw.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
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
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T?) -> T?
    {
        let raw: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in raw { free(pointer) } }
        let pointers: [UnsafePointer<CChar>?] = raw.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            return body(base)
        }
    }
}

/// One row of a result, as the shared SQL reads it.
struct PostgresRow: SQLRow {
    let result: PostgresResult
    let row: Int

    var columnCount: Int { result.columns }
    func text(_ column: Int) -> String? { result.text(row, Int32(truncatingIfNeeded: column)) }
    func int64(_ column: Int) -> Int64? { result.int64(row, Int32(truncatingIfNeeded: column)) }
    func bool(_ column: Int) -> Bool? { result.bool(row, Int32(truncatingIfNeeded: column)) }
}

/// The shared SQL layer on PostgreSQL.
extension PostgresConnection: SQLConnection {
    var dialect: SQLDialect { .postgres }

    func run(_ statement: SQLStatement, row: (PostgresRow) throws(StoreError) -> Void) throws(StoreError) -> Int {
        let result = try query(statement.sql, statement.values)
        for index in 0..<result.rows { try row(PostgresRow(result: result, row: index)) }
        return result.affected
    }

    func serialize(_ scope: LockScope) throws(StoreError) {
        switch scope {
        case .policy:
            _ = try execute("LOCK TABLE policy_rules, host_labels, user_lists IN SHARE ROW EXCLUSIVE MODE")
        case .challenges:
            _ = try execute("LOCK TABLE attestation_challenges IN SHARE ROW EXCLUSIVE MODE")
        case let .registration(user, host):
            _ = try query(
                "SELECT pg_advisory_xact_lock(\(Self.keyLockClass), hashtext($1))", [.text(user + "\n" + host)])
        case let .endorsementKey(host):
            _ = try query("SELECT pg_advisory_xact_lock(\(Self.keyLockClass), hashtext($1))", [.text(host)])
        case let .offlineChain(kid):
            _ = try query(
                "SELECT pg_advisory_xact_lock(\(Self.keyLockClass), hashtext($1))", [.text("offline\n" + kid)])
        case let .approvals(user):
            _ = try query(
                "SELECT pg_advisory_xact_lock(\(Self.keyLockClass), hashtext($1))", [.text("approvals\n" + user)])
        }
    }

    /// The first key of the two-key advisory locks (`pg_advisory_xact_lock(class, hashtext(…))`)
    /// that serialise registrations of one user on one host, EK pin changes of one host, the
    /// offline records of one key and the approval requests of one user, across instances
    /// (the one-key lock of migrations is another space).
    static let keyLockClass = 0x4641_4B59
}

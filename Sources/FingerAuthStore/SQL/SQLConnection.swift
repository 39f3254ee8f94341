import FingerAuthDomain

/// The one SQL layer of both stores: every query is written once, with `?1…?n` parameters
/// (PostgreSQL's connection turns them into `$1…$n` when it prepares the statement) and
/// double-quoted `"user"` and `"time"`, and runs on whatever connection the store hands in:
/// a read connection, or the store's write transaction. What differs between SQLite and
/// PostgreSQL beyond that is small and named here (`SQLDialect`, `LockScope`).

/// A parameter value, bound in the database's own type: SQLite binds text, integers and
/// booleans (0 or 1) natively, PostgreSQL sends their text form.
enum SQLValue {
    case text(String?)
    case integer(Int64?)
    case boolean(Bool)
}

/// One statement and its values: what a backend runs at once or, on PostgreSQL, sends in a
/// pipeline with the rest of a batch.
struct SQLStatement {
    let sql: String
    let values: [SQLValue]

    init(_ sql: String, _ values: [SQLValue] = []) {
        self.sql = sql
        self.values = values
    }
}

/// The current row of a result, its columns counted from 0.
protocol SQLRow {
    var columnCount: Int { get }
    /// The column as text; nil for NULL.
    func text(_ column: Int) -> String?
    /// The column as an integer; nil for NULL.
    func int64(_ column: Int) -> Int64?
    /// The column as a boolean (SQLite's 0 or 1, PostgreSQL's `t` or `f`); nil for NULL.
    func bool(_ column: Int) -> Bool?
}

/// What a change serialises against across instances of a fleet. SQLite has one writer and
/// `BEGIN IMMEDIATE`, so every write is serialised already; PostgreSQL takes a table lock or
/// a transaction-scoped advisory lock.
enum LockScope {
    /// Policy rules, host labels and user lists: one change at a time (readers do not wait).
    case policy
    /// Attestation challenges: one admission at a time, so the limits hold across instances.
    case challenges
    /// Registrations of one user on one host, so that two instances cannot both pass the
    /// key limit.
    case registration(user: String, host: String)
    /// The EK pin of one host: an admin's change and a registration's pin on first use.
    case endorsementKey(host: String)
    /// The offline records of one key: two uploads of the same records store them once.
    case offlineChain(kid: String)
    /// The remote approvals of one user: one pending approval per user, whichever instance
    /// the requests reach.
    case approvals(user: String)
}

/// How the two databases spell what the shared SQL cannot say once.
struct SQLDialect: Sendable {
    /// The database's time in whole seconds, fixed for the statement (pruning compares
    /// indexed columns with it).
    let statementTime: String
    /// The database's clock now, in whole seconds (`StoreUpkeep.databaseTime`).
    let clockTime: String
    /// What a pruning batch's row selection ends with.
    let skipLocked: String
    /// Audit rows of verified and of unverified requests, as their partial indexes say it.
    let verified: String
    let unverified: String
    /// Whether the failure counts of the rate limits live in the database (`rate_counters`).
    let sharesFailureCounts: Bool
    /// Whether a change of an approval tells the fleet's other instances (`NOTIFY`): on
    /// SQLite there is one instance, which wakes its own polls.
    let notifiesApprovals: Bool

    static let sqlite = SQLDialect(
        statementTime: "CAST(strftime('%s', 'now') AS INTEGER)",
        clockTime: "CAST(strftime('%s', 'now') AS INTEGER)",
        skipLocked: "", verified: "verified = 1", unverified: "verified = 0",
        sharesFailureCounts: false, notifiesApprovals: false)

    /// Rows another instance's pruner holds are skipped (SKIP LOCKED): no login waits on them.
    static let postgres = SQLDialect(
        statementTime: "extract(epoch FROM now())::bigint",
        clockTime: "extract(epoch FROM clock_timestamp())::bigint",
        skipLocked: " FOR UPDATE SKIP LOCKED", verified: "verified", unverified: "NOT verified",
        sharesFailureCounts: true, notifiesApprovals: true)
}

/// A connection the shared SQL runs on: `SQLiteDatabase` or `PostgresConnection`. Used by
/// one thread at a time (the store's writer lock or its pool).
protocol SQLConnection: AnyObject {
    associatedtype Row: SQLRow

    var dialect: SQLDialect { get }

    /// Runs `statement` (prepared once per connection) and calls `row` for each row of its
    /// result, in order; returns how many rows it inserted, changed or deleted (for a
    /// statement that writes).
    @discardableResult
    func run(_ statement: SQLStatement, row: (Row) throws(StoreError) -> Void) throws(StoreError) -> Int

    /// Serialises this transaction with others of `scope` (a no-op where writes are
    /// serialised anyway).
    func serialize(_ scope: LockScope) throws(StoreError)
}

extension SQLConnection {
    /// Runs `statement`, whose rows do not matter; how many rows it changed.
    @discardableResult
    func run(_ statement: SQLStatement) throws(StoreError) -> Int {
        try run(statement) { (_: Row) throws(StoreError) in }
    }

    /// Runs `sql`, whose rows do not matter; how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ values: [SQLValue] = []) throws(StoreError) -> Int {
        try run(SQLStatement(sql, values))
    }

    /// Each row of `sql`, made into a value by `map`.
    func rows<T>(_ sql: String, _ values: [SQLValue] = [], _ map: (Row) throws(StoreError) -> T) throws(StoreError)
        -> [T]
    {
        var out: [T] = []
        try run(SQLStatement(sql, values)) { (row: Row) throws(StoreError) in out.append(try map(row)) }
        return out
    }

    /// The first row of `sql`, made into a value by `map`; nil when there is none.
    func first<T>(_ sql: String, _ values: [SQLValue] = [], _ map: (Row) throws(StoreError) -> T) throws(StoreError)
        -> T?
    {
        var out: T?
        try run(SQLStatement(sql, values)) { (row: Row) throws(StoreError) in
            if out == nil { out = try map(row) }
        }
        return out
    }

    /// Each row of `sql` with every column as text (nil for NULL), every value bound as text:
    /// the policy's, the console's and the admin tables' queries, which cast what they compare.
    func textRows(_ sql: String, _ values: [String?]) throws(StoreError) -> [[String?]] {
        try rows(sql, values.map { .text($0) }) { (row: Row) throws(StoreError) -> [String?] in
            (0..<row.columnCount).map { row.text($0) }
        }
    }
}

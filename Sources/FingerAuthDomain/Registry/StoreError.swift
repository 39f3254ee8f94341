/// A storage failure. The text comes from the database (sqlite3_errmsg, libpq) and names
/// no secret: every value reaches the database as a bound parameter, never inside SQL text.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

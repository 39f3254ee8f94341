/// A storage failure. The text comes from the database (sqlite3_errmsg, libpq) and names
/// no secret: every value reaches the database as a bound parameter, never inside SQL text.
package struct StoreError: Error, CustomStringConvertible, Sendable {
    package let message: String

    package init(_ message: String) { self.message = message }

    package var description: String { message }
}

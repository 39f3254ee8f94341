import FingerAuthDomain

/// Where the registry lives, as `--db` or `db =` gives it: a `postgresql://` (or
/// `postgres://`) URL for the shared PostgreSQL store, anything else a SQLite file path.
package enum StoreLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    package init(_ text: String) {
        if text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") {
            self = .postgres(url: text)
        } else {
            self = .sqlite(path: text)
        }
    }

    /// The location as logs may show it: a PostgreSQL URL without its password
    /// (`postgresql://user:***@host/db`) and without query parameters (they may hold one).
    package var redacted: String {
        switch self {
        case let .sqlite(path): return path
        case let .postgres(url): return Self.redact(url)
        }
    }

    static func redact(_ url: String) -> String {
        let prefix = url.hasPrefix("postgresql://") ? "postgresql://" : "postgres://"
        guard url.hasPrefix(prefix) else { return "postgresql://***" }
        let scheme = prefix
        var rest = url.dropFirst(prefix.count)
        if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let path = rest[authorityEnd...]
        guard let at = authority.lastIndex(of: "@") else { return String(scheme) + rest }
        let userInfo = authority[..<at]
        let user = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let hidden = userInfo.contains(":") ? "\(user):***" : String(user)
        return String(scheme) + hidden + authority[at...] + path
    }

    /// Opens the store (schema created or migrated) with at most `connections` connections
    /// for reads (PostgreSQL: for every statement; size it for the HTTP worker threads, the
    /// group-commit writer and the pruner), each statement cancelled after
    /// `statementTimeout` milliseconds (PostgreSQL).
    package func open(connections: Int = 4, statementTimeout: Int = 5000) throws(StoreError) -> any AuthStorage {
        switch self {
        case let .sqlite(path): return try SQLiteStore(path: path, readers: connections)
        case let .postgres(url):
            return try PostgresStore(url: url, connections: connections, statementTimeout: statementTimeout)
        }
    }
}

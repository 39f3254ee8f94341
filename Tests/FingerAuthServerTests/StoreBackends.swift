import CPostgres
import FingerAuthDomain
import FingerAuthStore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The two stores fingerauthd runs on. A registry test runs its one body on each.
enum StoreBackend: String, CaseIterable {
    case sqlite
    case postgresql
}

/// One empty database of one backend for one test: SQLite in a temporary folder, or a
/// fresh database on the PostgreSQL server that `FA_TEST_POSTGRES_URL` names (`make unit`
/// starts one on loopback for the run). `open()` may be called again on the same data;
/// `remove()` deletes it.
final class BackendDatabase {
    let backend: StoreBackend
    /// The `--db` value: a path or a `postgresql://` URL.
    let location: String
    private let removal: () -> Void

    private init(backend: StoreBackend, location: String, removal: @escaping () -> Void) {
        self.backend = backend
        self.location = location
        self.removal = removal
    }

    /// The environment variable with the PostgreSQL server's URL, without a database name
    /// (`postgresql://fa@127.0.0.1:PORT`).
    static let serverVariable = "FA_TEST_POSTGRES_URL"

    static func make(_ backend: StoreBackend) throws -> BackendDatabase {
        switch backend {
        case .sqlite:
            let temp = TempDatabase()
            return BackendDatabase(backend: .sqlite, location: temp.path, removal: { temp.cleanup() })
        case .postgresql:
            guard let server = getenv(serverVariable).map({ String(cString: $0) }), !server.isEmpty else {
                throw StoreBackendError(
                    "\(serverVariable) is not set: 'make unit' starts a PostgreSQL server for these tests")
            }
            let name = "fa_unit_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
            try adminCommand(server, "CREATE DATABASE \(name)")
            return BackendDatabase(backend: .postgresql, location: server + "/" + name) {
                _ = try? adminCommand(server, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            }
        }
    }

    /// Opens the store (creating or migrating its schema).
    func open() throws -> any AuthStorage {
        try StoreLocation(location).open(connections: 4)
    }

    func remove() { removal() }

    /// Runs one statement on the server's `postgres` database (libpq, not the store's code).
    private static func adminCommand(_ server: String, _ sql: String) throws {
        guard let connection = PQconnectdb(server + "/postgres") else { throw StoreBackendError("libpq: no memory") }
        defer { PQfinish(connection) }
        guard PQstatus(connection) == CONNECTION_OK else {
            throw StoreBackendError("cannot connect to \(server): \(String(cString: PQerrorMessage(connection)))")
        }
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw StoreBackendError("\(sql): \(String(cString: PQerrorMessage(connection)))")
        }
    }
}

/// A backend that could not be set up, or an error a test body threw on one (named).
struct StoreBackendError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A test case whose tests run one body on every backend (`onEachBackend`); a failure says
/// on which.
class StoreBackendTestCase: XCTestCase {
    private var backend: StoreBackend?

    /// Runs `body` with a fresh, empty store of each backend in turn, and removes it after.
    func onEachBackend(_ body: (any AuthStorage, BackendDatabase) throws -> Void) throws {
        for kind in StoreBackend.allCases {
            backend = kind
            defer { backend = nil }
            let database = try BackendDatabase.make(kind)
            defer { database.remove() }
            do {
                let store = try database.open()
                defer { store.close() }
                try body(store, database)
            } catch {
                throw StoreBackendError("[\(kind.rawValue)] \(error)")
            }
        }
    }

    override func recordFailure(
        withDescription description: String, inFile filePath: String, atLine lineNumber: Int,
        expected: Bool
    ) {
        let prefix = backend.map { "[\($0.rawValue)] " } ?? ""
        super.recordFailure(
            withDescription: prefix + description, inFile: filePath, atLine: lineNumber,
            expected: expected)
    }
}

import FingerAuthDomain
import FingerAuthStore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Host tokens as the registry keeps them, what fingerauthd reads from a PostgreSQL URL,
/// and a SQLite store opened from its path.
final class StoreLocationTests: XCTestCase {
    // MARK: - host tokens

    func testANewHostTokenIsFortyThreeCharactersAndHashesToSixtyFourHexDigits() throws {
        let token = try XCTUnwrap(HostToken.generate())
        XCTAssertEqual(token.utf8.count, HostToken.length)
        let hash = try XCTUnwrap(HostToken.hash(token))
        XCTAssertEqual(hash.utf8.count, 64)
        XCTAssertTrue(HostToken.isTokenID(String(hash.prefix(HostToken.idLength))))
        XCTAssertNotEqual(HostToken.generate(), token)
    }

    func testTheHashIsTheSHA256OfTheTokensText() {
        let token = String(repeating: "A", count: 43)
        XCTAssertEqual(HostToken.hash(token), "0f007385b6f9d4b7eeb2748605afe1a984a0a3bfa3f014d09e2a784ce9e5cd1a")
        XCTAssertNotEqual(HostToken.hash(token), HostToken.hash(String(repeating: "B", count: 43)))
    }

    func testWhatIsNotShapedLikeATokenHasNoHash() {
        XCTAssertNil(HostToken.hash(""))
        XCTAssertNil(HostToken.hash(String(repeating: "A", count: 42)))
        XCTAssertNil(HostToken.hash(String(repeating: "A", count: 44)))
        XCTAssertNil(HostToken.hash(String(repeating: "A", count: 42) + "="))
        XCTAssertNil(HostToken.hash(String(repeating: "A", count: 42) + "+"))
    }

    func testATokenIDIsSixteenLowercaseHexDigits() {
        XCTAssertTrue(HostToken.isTokenID("0123456789abcdef"))
        XCTAssertFalse(HostToken.isTokenID("0123456789ABCDEF"))
        XCTAssertFalse(HostToken.isTokenID("0123456789abcde"))
        XCTAssertFalse(HostToken.isTokenID("0123456789abcdeg"))
    }

    // MARK: - PostgreSQL URLs

    func testTheHostsOfAURLWithoutPortsOrCredentials() {
        XCTAssertEqual(PostgresURL.hosts("postgresql://u:p@db1:5432,db2/fa"), ["db1", "db2"])
        XCTAssertEqual(PostgresURL.hosts("postgresql://[::1]:5432/fa"), ["::1"])
        XCTAssertEqual(PostgresURL.hosts("postgresql:///fa?host=/run/postgresql"), [""])
        XCTAssertEqual(PostgresURL.hosts("not a url"), [])
    }

    func testTheQueryIsPercentDecoded() {
        let query = PostgresURL.query("postgresql://db/fa?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem")
        XCTAssertEqual(query.map(\.0), ["sslmode", "sslrootcert"])
        XCTAssertEqual(query.map(\.1), ["verify-full", "/etc/ca.pem"])
        XCTAssertTrue(PostgresURL.query("postgresql://db/fa").isEmpty)
    }

    func testLocalHostsAreTheSocketLocalhostAndLoopback() {
        for host in ["", "/run/postgresql", "localhost", "127.0.0.1", "127.5.5.5", "::1", "%2Frun%2Fpostgresql"] {
            XCTAssertTrue(PostgresURL.isLocal(host), host)
        }
        for host in ["db.example", "10.0.0.1", "::2", "localhost.example"] {
            XCTAssertFalse(PostgresURL.isLocal(host), host)
        }
    }

    func testAHostParameterNamingAnotherMachineNeedsAnSSLModeToo() {
        XCTAssertNil(PostgresURL.transportProblem("postgresql://localhost/fa"))
        let problem = PostgresURL.transportProblem("postgresql:///fa?host=db.example")
        XCTAssertEqual(problem?.hasPrefix("postgresql: db.example is not on this machine"), true, problem ?? "")
        XCTAssertNil(PostgresURL.transportProblem("postgresql:///fa?host=db.example&sslmode=require"))
        XCTAssertNotNil(PostgresURL.transportProblem("postgresql://localhost/fa?hostaddr=127.0.0.1,10.1.1.1"))
    }

    // MARK: - SQLite

    func temporaryFolder() -> String {
        var template = Array("/tmp/fa-store-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) } ?? ""
        }
    }

    func testASQLiteStoreIsCreatedDurableInWALMode() throws {
        let folder = temporaryFolder()
        defer { _ = system("rm -rf '\(folder)'") }
        let store = try SQLiteStore(path: folder + "/registry.db", readers: 2)
        defer { store.close() }
        XCTAssertEqual(try store.durability(), "sqlite WAL synchronous=FULL")
        var st = stat()
        XCTAssertEqual(stat(folder + "/registry.db", &st), 0)
    }

    func testASQLiteStoreOpensAgainWithItsSchema() throws {
        let folder = temporaryFolder()
        defer { _ = system("rm -rf '\(folder)'") }
        try SQLiteStore(path: folder + "/registry.db").close()
        let again = try SQLiteStore(path: folder + "/registry.db")
        defer { again.close() }
        XCTAssertEqual(try again.durability(), "sqlite WAL synchronous=FULL")
    }

    func testAStoreInAMissingFolderCannotBeOpenedAndSaysWhere() {
        XCTAssertThrowsError(try SQLiteStore(path: "/nonexistent/fa/registry.db")) { error in
            let text = (error as? StoreError)?.message ?? ""
            XCTAssertTrue(text.hasPrefix("/nonexistent/fa/registry.db: cannot open database: "), text)
        }
    }

    func testAClosedStoreRefusesToWork() throws {
        let folder = temporaryFolder()
        defer { _ = system("rm -rf '\(folder)'") }
        let store = try SQLiteStore(path: folder + "/registry.db")
        store.close()
        XCTAssertThrowsError(try store.durability()) {
            XCTAssertEqual(($0 as? StoreError)?.message, "database closed")
        }
    }
}

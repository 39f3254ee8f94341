import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthOffline
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The offline sync's request and how its answer changes the books; and the host's clocks.
final class OfflineSyncTests: OfflineStateTestCase {
    func testTheSyncURLSitsBesideTheLoginURL() {
        XCTAssertEqual(
            OfflineSync.url(forLogin: "https://auth.example:8443/v1/login"), "https://auth.example:8443/v1/offline-sync"
        )
        XCTAssertEqual(
            OfflineSync.url(forLogin: "https://auth.example/v1/login?x=1"), "https://auth.example/v1/offline-sync")
        XCTAssertNil(OfflineSync.url(forLogin: "https://auth.example/v1/logins"))
        XCTAssertNil(OfflineSync.url(forLogin: "https://auth.example/"))
    }

    func testNothingToSyncIsNoRequest() {
        XCTAssertNil(OfflineSync.body([book]))
    }

    func testTheBodyNamesTheGrantAndTheUnsentRecords() throws {
        try keepGrant()
        let login = book.recordLogin(kid: kid, service: "sudo", jti: "j", pins: try pins, now: clock()) { _ in [1] }
        XCTAssertNoThrow(try login.get())
        let body = try XCTUnwrap(OfflineSync.body([book]))
        let json = try JSONParser().parse(body)
        XCTAssertEqual(json["grants"]?.arrayValue?.compactMap(\.stringValue), ["g-1"])
        XCTAssertEqual(json["records"]?.arrayValue?.compactMap(\.stringValue), book.records().map(\.line))
    }

    func testAnAnswerDropsAWithdrawnGrantAndMarksTheRecordsItNames() throws {
        try keepGrant()
        for jti in ["a", "b"] {
            _ = try book.recordLogin(kid: kid, service: "sudo", jti: jti, pins: try pins, now: clock()) { _ in [1] }
                .get()
        }
        let answer: JSONValue = .object([
            ("grants", .object([("g-1", .string("withdrawn"))])),
            ("held", .object([(kid, .array([.integer(1)]))])),
            ("rejected", .object([(kid, .array([.integer(2)]))])),
        ])
        OfflineSync.apply(answer, books: [book], pins: GrantPins(stateDirectory: root))
        XCTAssertFalse(exists(paths.offlineGrant), "the withdrawn grant is dropped")
        XCTAssertEqual(book.unsent().count, 0)
        XCTAssertNil(OfflineSync.body([book]), "nothing is left to say")
    }

    func testAnAnswerThatSaysNothingChangesNothing() throws {
        try keepGrant()
        OfflineSync.apply(
            .object([("grants", .object([("g-1", .string("active"))]))]), books: [book],
            pins: GrantPins(stateDirectory: root))
        XCTAssertTrue(exists(paths.offlineGrant))
        XCTAssertTrue(GrantPins(stateDirectory: root).keys().isEmpty)
    }

    func testAnAnswerPinsTheGrantKeysItNames() throws {
        let key = try self.key
        let answer: JSONValue = .object([("grant_keys", .array([key.publicKey.json(kid: key.kid)]))])
        OfflineSync.apply(answer, books: [], pins: GrantPins(stateDirectory: root))
        XCTAssertEqual(GrantPins(stateDirectory: root).keys(), [key.kid: key.publicKey])
    }

    func testTheHostClocksAreTheWallClockAndTheBootClockOfThisBoot() throws {
        let reading = try XCTUnwrap(GrantClock.read())
        XCTAssertLessThanOrEqual(abs(reading.wall - Int64(time(nil))), 2)
        XCTAssertEqual(reading.bootID.utf8.count, 36, reading.bootID)
        XCTAssertGreaterThan(reading.bootMilliseconds, 0)
        let later = try XCTUnwrap(GrantClock.read())
        XCTAssertEqual(later.bootID, reading.bootID)
        XCTAssertGreaterThanOrEqual(later.bootMilliseconds, reading.bootMilliseconds)
    }
}

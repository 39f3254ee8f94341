import FingerAuthSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The one wrapper of getpwnam_r / getpwuid_r, against this machine's user database (root
/// is in every one).
final class SystemUserDatabaseTests: XCTestCase {
    func testFindsRootByNameAndByUid() {
        let users = SystemUserDatabase()
        guard case let .found(byName) = users.account(named: "root") else { return XCTFail("root by name") }
        XCTAssertEqual(byName.uid, 0)
        XCTAssertEqual(users.account(uid: 0), .found(byName))
        XCTAssertTrue(users.exists("root"))
        XCTAssertEqual(users.uid(of: "root"), 0)
        XCTAssertEqual(users.name(of: 0), "root")
    }

    func testUnknownNamesAndUidsAreNotFound() {
        let users = SystemUserDatabase()
        XCTAssertEqual(users.account(named: "fa-nobody-here"), .notFound)
        XCTAssertFalse(users.exists("fa-nobody-here"))
        XCTAssertNil(users.uid(of: "fa-nobody-here"))
        XCTAssertNil(users.name(of: 4_000_000_123))
        // A name with a NUL byte would reach NSS cut short ("root"): it names nobody.
        XCTAssertEqual(users.account(named: "root\u{0}x"), .notFound)
        XCTAssertFalse(users.exists("root\u{0}"))
    }

    /// A buffer too small for the entry (ERANGE) is doubled and the lookup tried again, up
    /// to the cap; past it the lookup fails instead of growing without bound.
    func testTheBufferGrowsOnERANGEUpToItsCap() {
        let growing = SystemUserDatabase(initialBufferBytes: 1, maxBufferBytes: 64 * 1024)
        XCTAssertEqual(growing.name(of: 0), "root")
        XCTAssertTrue(growing.exists("root"))
        let capped = SystemUserDatabase(initialBufferBytes: 1, maxBufferBytes: 4)
        XCTAssertEqual(capped.account(uid: 0), .failed(errno: ERANGE))
        XCTAssertEqual(capped.account(named: "root"), .failed(errno: ERANGE))
        XCTAssertFalse(capped.exists("root"), "a failed lookup is no user (deny by default)")
    }
}

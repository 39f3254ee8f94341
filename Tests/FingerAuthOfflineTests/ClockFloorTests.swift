import FingerAuthCore
import FingerAuthOffline
import XCTest

/// The clock floor as the helper reads and raises it: a root 0600 file of one number,
/// refused when it may not be trusted or does not hold a time.
final class ClockFloorTests: OfflineStateTestCase {
    var floor: ClockFloor { ClockFloor(stateDirectory: root) }

    func testTheFloorLivesInTheStateDirectory() {
        XCTAssertEqual(floor.path, root + "/clock-floor")
    }

    func testNoFileYetIsAFloorOfZero() {
        XCTAssertEqual(floor.read(), .success(0))
    }

    func testRaisingWritesTheTimeRootOnly() {
        floor.raise(to: 1_700_000_000)
        XCTAssertEqual(text(floor.path), "1700000000\n")
        XCTAssertEqual(mode(floor.path), 0o600)
        XCTAssertEqual(floor.read(), .success(1_700_000_000))
    }

    func testTheFloorNeverGoesDown() {
        floor.raise(to: 2000)
        floor.raise(to: 1000)
        XCTAssertEqual(floor.read(), .success(2000))
        floor.raise(to: 3000)
        XCTAssertEqual(floor.read(), .success(3000))
    }

    func testTimesOutOfRangeAreNotWritten() {
        floor.raise(to: 0)
        floor.raise(to: -5)
        floor.raise(to: OfflineRecord.maxSeq + 1)
        XCTAssertFalse(exists(floor.path))
    }

    func testAFloorOthersCanReadIsRefusedWithTheFile() {
        put(floor.path, "100\n", mode: 0o644)
        XCTAssertEqual(floor.read(), .failure(GrantRefusal("clock-floor: \(floor.path): mode 644 is too open")))
    }

    func testAFloorOfAnotherOwnerIsRefused() {
        put(floor.path, "100\n")
        XCTAssertEqual(chown(floor.path, 1000, 1000), 0)
        XCTAssertEqual(
            floor.read(),
            .failure(GrantRefusal("clock-floor: \(floor.path): owned by uid 1000, must be owned by root")))
    }

    func testAFloorThatHoldsNoTimeIsRefused() {
        for junk in ["", "\n", "-5\n", "12a\n", "1e9\n", "99999999999999999999\n", "\(OfflineRecord.maxSeq + 1)\n"] {
            put(floor.path, junk)
            XCTAssertEqual(floor.read(), .failure(GrantRefusal("clock-floor does not hold a time")), junk)
        }
    }

    func testWhitespaceAroundTheNumberIsAllowed() {
        put(floor.path, "  42 \n\n")
        XCTAssertEqual(floor.read(), .success(42))
    }

    func testAFloorThatCannotBeReadIsReplacedByTheNextRaise() {
        put(floor.path, "garbage\n")
        floor.raise(to: 500)
        XCTAssertEqual(floor.read(), .success(500))
        XCTAssertEqual(mode(floor.path), 0o600)
    }
}

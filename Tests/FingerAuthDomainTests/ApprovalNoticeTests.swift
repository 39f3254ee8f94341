import FingerAuthDomain
import Synchronization
import XCTest

/// The fleet's notices of changed approvals (PostgreSQL's `fingerauth_approvals` payloads)
/// and the wake-ups they cause.
final class ApprovalNoticeTests: XCTestCase {
    func testAPayloadCarriesTheIdAndTheUserAndReadsBack() {
        let notice = ApprovalNotice(id: "MgBdCTs-3uouYIJRzJMI8g", user: "alice")
        XCTAssertEqual(notice.payload, "MgBdCTs-3uouYIJRzJMI8g alice")
        XCTAssertEqual(ApprovalNotice(payload: notice.payload), notice)
        XCTAssertEqual(ApprovalNotice(payload: "a_b-C alice.smith"), ApprovalNotice(id: "a_b-C", user: "alice.smith"))
    }

    func testTheLongestPayloadIsFarBelowPostgresLimit() {
        let user = String(repeating: "a", count: 32)
        let id = String(repeating: "A", count: 64)
        XCTAssertNotNil(ApprovalNotice(payload: id + " " + user))
        XCTAssertLessThan(ApprovalNotice(id: id, user: user).payload.utf8.count, 8000 / 50)
    }

    func testABadPayloadIsIgnored() {
        let bad = [
            "", " ", "id", "id ", " alice", "id  alice", "id alice extra", "id\talice", "id+/ alice", "id= alice",
            "id Alice", "id alice\n", "id ../etc", "id -rf", "id al ice",
            String(repeating: "A", count: 65) + " alice", "id " + String(repeating: "a", count: 33), "ïd alice",
            "id\u{0} alice", String(repeating: "x ", count: 5000),
        ]
        for payload in bad {
            XCTAssertNil(ApprovalNotice(payload: payload), payload)
        }
    }

    func testWakingEveryoneWakesEveryParkedPollAndEveryVersionReadBefore() {
        let room = WaitRoom()
        let woken = Mutex(0)
        let alice = room.version(.user("alice"))
        let approval = room.version(.approval("x"))
        XCTAssertNotNil(room.enter(.user("alice"), after: alice) { woken.withLock { $0 += 1 } })
        XCTAssertNotNil(room.enter(.approval("y"), after: room.version(.approval("y"))) { woken.withLock { $0 += 1 } })
        room.wakeEveryone()
        XCTAssertEqual(woken.withLock { $0 }, 2)
        XCTAssertEqual(room.waiting, 0)
        // A poll that read its version before and parks only now is woken at once.
        XCTAssertNil(room.enter(.approval("x"), after: approval) { woken.withLock { $0 += 1 } })
        XCTAssertEqual(woken.withLock { $0 }, 3)
        // The room still parks afterwards (it is not closed).
        XCTAssertNotNil(room.enter(.user("bob"), after: room.version(.user("bob"))) {})
        XCTAssertEqual(room.waiting, 1)
    }
}

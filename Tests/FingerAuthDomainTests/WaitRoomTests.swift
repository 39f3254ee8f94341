import FingerAuthDomain
import Synchronization
import XCTest

/// The long polls' wait room and the refusals audited once per window.
final class WaitRoomTests: XCTestCase {
    private final class Count: Sendable {
        let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var now: Int { value.withLock { $0 } }
    }

    func testAWakeReachesEveryWaiterOfItsKeyOnceAndNoOther() {
        let room = WaitRoom()
        let alice = Count()
        let bob = Count()
        let version = room.version(.user("alice"))
        XCTAssertNotNil(room.enter(.user("alice"), after: version) { alice.add() })
        XCTAssertNotNil(room.enter(.user("alice"), after: version) { alice.add() })
        XCTAssertNotNil(room.enter(.user("bob"), after: room.version(.user("bob"))) { bob.add() })
        XCTAssertEqual(room.waiting, 3)
        room.wake(.user("alice"))
        room.wake(.user("alice"))
        XCTAssertEqual(alice.now, 2)
        XCTAssertEqual(bob.now, 0)
        XCTAssertEqual(room.waiting, 1)
    }

    func testAChangeBetweenTheReadAndTheParkingWakesAtOnce() {
        let room = WaitRoom()
        let woken = Count()
        let version = room.version(.approval("x"))
        room.wake(.approval("x"))
        XCTAssertNil(room.enter(.approval("x"), after: version) { woken.add() })
        XCTAssertEqual(woken.now, 1)
        XCTAssertEqual(room.waiting, 0)
    }

    func testLeavingAtTheDeadlineTakesTheWaiterOutAndAWakeAfterItCallsNothing() {
        let room = WaitRoom()
        let woken = Count()
        guard let ticket = room.enter(.approval("y"), after: 0, wake: { woken.add() }) else {
            return XCTFail("parked")
        }
        XCTAssertTrue(room.leave(.approval("y"), ticket: ticket))
        XCTAssertFalse(room.leave(.approval("y"), ticket: ticket))
        room.wake(.approval("y"))
        XCTAssertEqual(woken.now, 0)
    }

    func testClosingWakesEveryoneAndParksNoMore() {
        let room = WaitRoom()
        let woken = Count()
        _ = room.enter(.user("a"), after: 0) { woken.add() }
        _ = room.enter(.approval("b"), after: 0) { woken.add() }
        room.closeAll()
        XCTAssertEqual(woken.now, 2)
        XCTAssertNil(room.enter(.user("a"), after: room.version(.user("a"))) { woken.add() })
        XCTAssertEqual(woken.now, 3)
    }

    func testForgottenVersionsOnlyEverWakeTooEarlyNeverTooLate() {
        let room = WaitRoom(capacity: 16)
        let woken = Count()
        let version = room.version(.user("kept"))
        room.wake(.user("kept"))
        for i in 0..<100 { room.wake(.user("other\(i)")) }
        // "kept" may have been forgotten (version 0 again): a waiter with the old version
        // must still be woken at once, never parked past the change.
        _ = room.enter(.user("kept"), after: version) { woken.add() }
        XCTAssertEqual(woken.now, 1)
    }

    func testARefusalIsAuditedOncePerSubjectReasonAndWindow() {
        let once = RefusalOnce(window: 60, capacity: 2)
        XCTAssertTrue(once.first("alice", .approvalPending, now: 120))
        XCTAssertFalse(once.first("alice", .approvalPending, now: 150))
        XCTAssertTrue(once.first("alice", .approvalMuted, now: 150))
        XCTAssertFalse(once.first("bob", .approvalPending, now: 150), "past capacity: quiet until the next window")
        XCTAssertTrue(once.first("alice", .approvalPending, now: 180))
    }
}

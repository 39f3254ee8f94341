import FingerAuthApproval
import XCTest

/// Whose approvals the watcher watches: only a person sitting at an unlocked local seat, with
/// a device key on this workstation.
final class WatchEligibilityTests: XCTestCase {
    func session(
        _ user: String = "alice", uid: UInt32 = 5001, seat: String = "seat0", active: Bool = true, remote: Bool = false,
        kind: String = "user", locked: Bool = false
    ) -> SeatSession {
        SeatSession(
            user: user, uid: uid, seat: seat, active: active, remote: remote, sessionClass: kind, locked: locked)
    }

    func testAnActiveUnlockedLocalSessionWithAKeyIsWatched() {
        XCTAssertEqual(WatchEligibility.watched(sessions: [session()], keyed: ["alice"]), ["alice": 5001])
    }

    func testNoDeviceKeyNoWatch() {
        XCTAssertEqual(WatchEligibility.watched(sessions: [session()], keyed: ["bob"]), [:])
    }

    func testALockedSessionIsNotWatched() {
        XCTAssertEqual(WatchEligibility.watched(sessions: [session(locked: true)], keyed: ["alice"]), [:])
    }

    func testARemoteOrSeatlessSessionIsNotWatched() {
        XCTAssertEqual(WatchEligibility.watched(sessions: [session(remote: true)], keyed: ["alice"]), [:])
        XCTAssertEqual(WatchEligibility.watched(sessions: [session(seat: "")], keyed: ["alice"]), [:])
    }

    func testAnInactiveSessionOrAGreeterIsNotWatched() {
        XCTAssertEqual(WatchEligibility.watched(sessions: [session(active: false)], keyed: ["alice"]), [:])
        XCTAssertEqual(
            WatchEligibility.watched(sessions: [session("gdm", uid: 120, kind: "greeter")], keyed: ["gdm"]), [:])
    }

    func testAnSshSessionBesideAnUnlockedSeatStillWatchesAndOnlyForHer() {
        let sessions = [
            session(seat: "", remote: true), session(), session("bob", uid: 5002, seat: "", remote: true),
        ]
        XCTAssertEqual(WatchEligibility.watched(sessions: sessions, keyed: ["alice", "bob"]), ["alice": 5001])
    }

    func testTheLockedSeatWinsOverNothingElse() {
        // Her seat session locked, her ssh session alive: nobody sits at an unlocked screen.
        let sessions = [session(locked: true), session(seat: "", remote: true)]
        XCTAssertEqual(WatchEligibility.watched(sessions: sessions, keyed: ["alice"]), [:])
    }
}

import FingerAuthApproval
import FingerAuthCore
import XCTest

/// One approval at the watcher: the first of finger, "Not me" and the approval's end decides,
/// the scan and the notification never outlive it, and nothing happens twice.
final class ApprovalRoundTests: XCTestCase {
    func round() -> ApprovalRound {
        ApprovalRound(what: "web01's request (code 47)")
    }

    func testAFingerApprovesAfterClosingTheNotification() {
        var r = round()
        XCTAssertEqual(r.handle(.matched), [.closeNotification, .decide(.approve)])
        XCTAssertTrue(r.ended)
    }

    func testNotMeStopsTheScanAndDenies() {
        var r = round()
        XCTAssertEqual(r.handle(.notMe), [.stopScan, .closeNotification, .decide(.deny)])
        XCTAssertTrue(r.ended)
    }

    func testGoneStopsBothAndDecidesNothing() {
        var r = round()
        let steps = r.handle(.gone)
        XCTAssertEqual(Array(steps.prefix(2)), [.stopScan, .closeNotification])
        XCTAssertFalse(steps.contains(.decide(.approve)) || steps.contains(.decide(.deny)))
        XCTAssertEqual(
            steps.last,
            .log(
                "web01's request (code 47) is no longer pending (decided on another workstation, withdrawn or expired)")
        )
    }

    func testExpiredAndLeftSeatDecideNothing() {
        for event in [ApprovalRound.Event.expired, .leftSeat] {
            var r = round()
            let steps = r.handle(event)
            XCTAssertEqual(Array(steps.prefix(2)), [.stopScan, .closeNotification], "\(event)")
            XCTAssertEqual(steps.count, 3)
            XCTAssertTrue(r.ended)
        }
    }

    func testADismissedNotificationLeavesTheFingerToDecide() {
        var r = round()
        XCTAssertEqual(r.handle(.dismissed), [])
        XCTAssertFalse(r.ended)
        XCTAssertEqual(r.handle(.matched), [.decide(.approve)])
    }

    func testNoMatchLeavesItPendingAndClosesTheNotification() {
        var r = round()
        XCTAssertEqual(
            r.handle(.noMatch), [.closeNotification, .log("no match: web01's request (code 47) stays pending")])
    }

    func testAScanThatFailedClosesTheNotificationAndSaysWhy() {
        var r = round()
        XCTAssertEqual(
            r.handle(.scanFailed("reader in use")),
            [.closeNotification, .log("no finger read: reader in use; web01's request (code 47) stays pending")])
    }

    func testNothingHappensAfterTheEnd() {
        var r = round()
        _ = r.handle(.notMe)
        XCTAssertEqual(r.handle(.matched), [])
        XCTAssertEqual(r.handle(.gone), [])
    }

    func testADismissedNotificationIsNotClosedAgain() {
        var r = round()
        _ = r.handle(.dismissed)
        let steps = r.handle(.gone)
        XCTAssertEqual(steps.first, .stopScan)
        XCTAssertFalse(steps.contains(.closeNotification))
        XCTAssertEqual(steps.count, 2)
    }

    func testTheOutcomeLinesNameTheHostAndNeverATokenOnly() {
        let shown = PendingApproval(
            id: "AbCdEfGhIjKlMnOpQrStUv", code: "47", user: "alice", host: "web01", service: "sudo", rhost: "10.0.0.5",
            tty: "ssh", nonce: "n0nce-n0nce-n0nce-n0nce", expires: 0)
        XCTAssertEqual(DecisionOutcome(.success(.approved), shown), DecisionOutcome(.success(.approved), shown))
        XCTAssertEqual(DecisionOutcome(.success(.approved), shown).line, "approved: web01 may log alice in to sudo")
        XCTAssertTrue(DecisionOutcome(.success(.denied), shown).decided)
        let closed = DecisionOutcome(.success(.closed(status: "approved")), shown)
        XCTAssertEqual(closed.line, "not decided: the request is no longer pending (approved)")
        XCTAssertFalse(closed.decided)
        XCTAssertTrue(
            DecisionOutcome(.success(.refused(status: 401, reason: "expired")), shown).line.hasSuffix(
                "check this computer's clock (timedatectl set-ntp true)"))
    }
}

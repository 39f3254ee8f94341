import FingerAuthDomain
import FingerAuthStore
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The fleet's notices on PostgreSQL: every committed change of an approval is heard by an
/// `ApprovalListener` on the same database (another instance's), a refusal that changed
/// nothing is not, and the listener stops at once.
extension ApprovalStoreTests {
    /// What the listener woke.
    final class Heard: ApprovalWakeups {
        let notices = Mutex<[ApprovalNotice]>([])
        let everyone = Mutex(0)

        func approvalChanged(_ notice: ApprovalNotice) { notices.withLock { $0.append(notice) } }
        func anythingMayHaveChanged() { everyone.withLock { $0 += 1 } }
    }

    /// Waits up to 5 s for `condition`.
    func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    func testEveryCommittedChangeIsHeardByAnotherInstancesListenerAndARefusalIsNot() throws {
        try onEachBackend { store, database in
            // SQLite: one instance, nothing to hear.
            guard database.backend == .postgresql else { return }
            let heard = Heard()
            let listener = ApprovalListener(url: database.location, wakeups: heard, log: { _ in })
            XCTAssertTrue(listener.start())
            // Connected: it woke every parked poll once.
            XCTAssertTrue(eventually { heard.everyone.withLock { $0 } == 1 })

            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            let alice = ApprovalNotice(id: "a1", user: "alice")
            XCTAssertTrue(eventually { heard.notices.withLock { $0 } == [alice] })
            // Refused (another host's request is pending): nothing changed, nothing is sent.
            guard case .pendingElsewhere = try open(store, request("a2", host: "db01"), jti: "r2") else {
                return XCTFail("a second pending approval was admitted")
            }
            guard case .decided = try decide(store, "a1", jti: "d1") else { return XCTFail("not decided") }
            XCTAssertTrue(eventually { heard.notices.withLock { $0 } == [alice, alice] })
            // Already decided: closing it changes nothing and sends nothing.
            XCTAssertNil(
                try store.closeApproval(
                    id: "a1", as: .withdrawn, audit: { _ in AuditEvent(event: .approvalWithdrawn, outcome: .accept) },
                    now: 1006))
            // A retry withdraws its predecessor and opens itself: two notices, one transaction.
            XCTAssertEqual(try open(store, request("b1", user: "bob"), jti: "r3", now: 1010), .opened(replaced: nil))
            XCTAssertEqual(
                try open(store, request("b2", user: "bob"), jti: "r4", now: 1011), .opened(replaced: "b1"))
            let withdrawn = ApprovalNotice(id: "b1", user: "bob")
            let bob = [withdrawn, withdrawn, ApprovalNotice(id: "b2", user: "bob")]
            XCTAssertTrue(eventually { heard.notices.withLock { $0 } == [alice, alice] + bob })

            let stopping = Date()
            listener.stop()
            XCTAssertLessThan(Date().timeIntervalSince(stopping), 1)
            XCTAssertEqual(heard.everyone.withLock { $0 }, 1)
        }
    }
}

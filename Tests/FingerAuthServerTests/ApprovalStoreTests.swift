import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem
import FingerAuthThreads
import XCTest

/// Remote approvals on each backend, one body for both: one pending approval per user, a
/// retry replacing its predecessor, refusals that write nothing, a decision taken once (also
/// by two stores on one database at once), expiry, the mute after a denial, and the audit
/// rows naming approval, client address and workstation.
final class ApprovalStoreTests: StoreBackendTestCase {
    func request(
        _ id: String, user: String = "alice", host: String = "web01", terminal: String = "pts/1",
        address: String = "10.0.0.5", created: Int64 = 1000, expires: Int64 = 1030
    ) -> ApprovalRecord {
        ApprovalRecord(
            id: id, code: "47", user: user, host: host, hostKid: "hk-" + host, service: "sudo",
            clientAddress: address, terminal: terminal, nonce: "nonce-" + id, created: created, expires: expires)
    }

    /// The request's own row, as the service writes it.
    func requestRow(_ approval: ApprovalRecord) -> AuditEvent {
        var row = AuditEvent(
            event: .approvalRequest, user: approval.user, host: approval.host, kid: approval.hostKid, outcome: .accept,
            peer: "192.0.2.7")
        row.service = approval.service
        row.approval = approval.id
        row.clientAddress = approval.clientAddress.isEmpty ? nil : approval.clientAddress
        return row
    }

    func open(
        _ store: any AuthStorage, _ approval: ApprovalRecord, jti: String, now: Int64 = 1000, mute: Int64 = 1200
    ) throws -> ApprovalAdmission {
        try store.openApproval(
            approval, jti: jti, keepUntil: now + 100, muteSeconds: mute, audit: requestRow(approval), now: now)
    }

    func decide(
        _ store: any AuthStorage, _ id: String, approve: Bool = true, jti: String, workstation: String = "ws-alice",
        user: String = "alice", now: Int64 = 1005
    ) throws -> DecisionResult {
        try deviceKey(store, user: user, workstation: workstation)
        return try store.decideApproval(
            Self.decision(id, approve: approve, jti: jti, workstation: workstation, user: user, now: now),
            audit: Self.decisionRows, now: now)
    }

    static func decision(
        _ id: String, approve: Bool, jti: String, workstation: String, user: String = "alice", now: Int64
    ) -> ApprovalDecision {
        ApprovalDecision(
            id: id, user: user, approve: approve, kid: "dk-\(user)-\(workstation)", workstation: workstation,
            jti: jti, keepUntil: now + 100)
    }

    /// Registers the device key `decision` names for `user` on `workstation` (once), as
    /// `status`: the decision's transaction reads it again.
    func deviceKey(
        _ store: any AuthStorage, user: String, workstation: String, status: KeyStatus = .active
    ) throws {
        let kid = "dk-\(user)-\(workstation)"
        guard try store.registeredKey(kid: kid) == nil else { return }
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let key = RegisteredKey(kid: kid, user: user, host: workstation, jwk: maker.jwk, status: .active, created: 10)
        _ = try store.register(
            key, proofJTI: "proof-" + kid, keepUntil: 10_000, audit: AuditEvent(event: .register, outcome: .deny),
            now: 10)
        if status == .revoked { _ = try store.revoke(kid: kid, now: 11) }
    }

    /// A decision's row, as the service writes it.
    @Sendable static func decisionRows(_ record: ApprovalRecord) -> [AuditEvent] {
        var row = AuditEvent(
            event: record.status == .approved ? .approvalApproved : .approvalDenied, user: record.user,
            host: record.host, kid: record.decidedKid, outcome: .accept, peer: "192.0.2.9")
        row.service = record.service
        row.approval = record.id
        row.clientAddress = record.clientAddress
        row.workstation = record.workstation
        return [row]
    }

    @Sendable static func withdrawRow(_ record: ApprovalRecord) -> AuditEvent {
        var row = AuditEvent(event: .approvalWithdrawn, user: record.user, host: record.host, outcome: .accept)
        row.approval = record.id
        return row
    }

    /// The approval rows as `event reason approval client-address workstation`, oldest first.
    func approvalRows(_ store: any AuthStorage) throws -> [String] {
        try store.auditRecords(AuditFilter(limit: 1000)).map(\.event).filter { $0.approval != nil }.map {
            [$0.event.name, $0.reason?.text ?? "-", $0.approval ?? "-", $0.clientAddress ?? "-", $0.workstation ?? "-"]
                .joined(separator: " ")
        }
    }

    func testAnApprovalIsPendingUntilDecidedOnceAndItsRowsNameItsAddressAndWorkstation() throws {
        try onEachBackend { store, _ in
            let a = request("a1")
            XCTAssertEqual(try open(store, a, jti: "r1"), .opened(replaced: nil))
            XCTAssertEqual(try store.approval(id: "a1"), a)
            XCTAssertEqual(try store.pendingApprovals(user: "alice", now: 1029), [a])
            XCTAssertEqual(try store.pendingApprovals(user: "alice", now: 1030), [], "past its expiry")
            XCTAssertEqual(try store.pendingApprovals(user: "bob", now: 1000), [])

            var approved = a
            approved.status = .approved
            approved.decided = 1005
            approved.decidedKid = "dk-alice-ws-alice"
            approved.workstation = "ws-alice"
            XCTAssertEqual(try decide(store, "a1", jti: "d1"), .decided(approved))
            XCTAssertEqual(try store.approval(id: "a1"), approved)
            XCTAssertEqual(try store.pendingApprovals(user: "alice", now: 1006), [])
            // Another workstation, later: the first decision stands.
            XCTAssertEqual(
                try decide(store, "a1", approve: false, jti: "d2", workstation: "ws-other", now: 1006),
                .closed(.approved))
            XCTAssertEqual(try decide(store, "a1", jti: "d1", now: 1007), .replayed)
            XCTAssertEqual(try decide(store, "nope", jti: "d3"), .unknown)
            XCTAssertEqual(try store.approval(id: "a1"), approved)

            let expected = [
                "approval_requested - a1 10.0.0.5 -", "approval_approved - a1 10.0.0.5 ws-alice",
            ]
            XCTAssertEqual(try approvalRows(store), expected)
            // The console reads the same columns.
            let console = try store.consoleAudit(ConsoleAuditQuery(user: "alice", limit: 10)).map(\.event)
            XCTAssertEqual(console.map(\.workstation), ["ws-alice", nil])
            XCTAssertEqual(console.map(\.approval), ["a1", "a1"])
            XCTAssertEqual(console.map(\.clientAddress), ["10.0.0.5", "10.0.0.5"])
        }
    }

    func testARequestWhileAnotherIsPendingElsewhereIsRefusedAndWritesNothing() throws {
        try onEachBackend { store, _ in
            let a = request("a1")
            XCTAssertEqual(try open(store, a, jti: "r1"), .opened(replaced: nil))
            let rows = try store.auditEvents(limit: 100).count
            // Another host, another terminal of the same host, another client: not a retry.
            XCTAssertEqual(try open(store, request("b1", host: "db01"), jti: "r2", now: 1001), .pendingElsewhere(a))
            XCTAssertEqual(try open(store, request("b2", terminal: "pts/2"), jti: "r3"), .pendingElsewhere(a))
            XCTAssertEqual(try open(store, request("b3", address: "10.0.0.6"), jti: "r4"), .pendingElsewhere(a))
            XCTAssertEqual(try store.auditEvents(limit: 100).count, rows)
            XCTAssertNil(try store.approval(id: "b1"))
            XCTAssertEqual(try store.approvals(user: "alice", host: nil, limit: 10).map(\.id), ["a1"])
            // Another user is not held up.
            XCTAssertEqual(try open(store, request("c1", user: "bob"), jti: "r5"), .opened(replaced: nil))
            // The refused request's jti was not used up: once a1 is gone it is admitted.
            XCTAssertNotNil(try store.closeApproval(id: "a1", as: .withdrawn, audit: Self.withdrawRow, now: 1002))
            XCTAssertEqual(try open(store, request("b1", host: "db01"), jti: "r2", now: 1003), .opened(replaced: nil))
        }
    }

    func testARetryFromTheSameOriginReplacesThePendingApproval() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            let retry = request("a2", created: 1004, expires: 1034)
            XCTAssertEqual(try open(store, retry, jti: "r2", now: 1004), .opened(replaced: "a1"))
            XCTAssertEqual(try store.approval(id: "a1")?.status, .withdrawn)
            XCTAssertEqual(try store.approval(id: "a1")?.decided, 1004)
            XCTAssertEqual(try store.pendingApprovals(user: "alice", now: 1005), [retry])
            XCTAssertEqual(
                try approvalRows(store),
                [
                    "approval_requested - a1 10.0.0.5 -", "approval_withdrawn replaced_by_retry a1 10.0.0.5 -",
                    "approval_requested - a2 10.0.0.5 -",
                ])
            let withdrawn = try store.auditRecords(AuditFilter(limit: 10)).map(\.event)
                .first { $0.event == .approvalWithdrawn }
            XCTAssertEqual(withdrawn?.peer, "192.0.2.7")
            XCTAssertEqual(withdrawn?.outcome, .accept)
        }
    }

    func testAReplayedRequestIsRefusedAndWritesNothing() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            // Even as a retry (which would otherwise replace a1).
            XCTAssertEqual(try open(store, request("a2"), jti: "r1", now: 1001), .replayed)
            XCTAssertNil(try store.approval(id: "a2"))
            XCTAssertEqual(try store.approval(id: "a1")?.status, .pending)
            XCTAssertEqual(try store.auditEvents(limit: 100).count, 1)
        }
    }

    func testADecisionAfterTheExpiryExpiresTheApprovalWithItsRow() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            XCTAssertEqual(try decide(store, "a1", jti: "d1", now: 1030), .expired)
            XCTAssertEqual(try store.approval(id: "a1")?.status, .expired)
            XCTAssertEqual(try store.approval(id: "a1")?.decided, 1030)
            XCTAssertNil(try store.approval(id: "a1")?.workstation)
            XCTAssertEqual(try decide(store, "a1", jti: "d2", now: 1031), .closed(.expired))
            XCTAssertEqual(
                try approvalRows(store), ["approval_requested - a1 10.0.0.5 -", "approval_expired - a1 10.0.0.5 -"])
        }
    }

    func testOverdueApprovalsExpireWhenTheUsersNextRequestIsAdmitted() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            let next = request("b1", host: "db01", address: "", created: 1040, expires: 1070)
            XCTAssertEqual(try open(store, next, jti: "r2", now: 1040), .opened(replaced: nil))
            XCTAssertEqual(try store.approval(id: "a1")?.status, .expired)
            XCTAssertEqual(try store.pendingApprovals(user: "alice", now: 1041), [next])
            XCTAssertEqual(
                try approvalRows(store),
                [
                    "approval_requested - a1 10.0.0.5 -", "approval_expired - a1 10.0.0.5 -",
                    "approval_requested - b1 - -",
                ])
        }
    }

    func testADenialMutesTheUsersRequestsForMuteSeconds() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            XCTAssertEqual(try decide(store, "a1", approve: false, jti: "d1").status, .denied)
            let rows = try store.auditEvents(limit: 100).count
            XCTAssertEqual(try open(store, request("a2", host: "db01"), jti: "r2", now: 1010), .muted(until: 2205))
            XCTAssertEqual(try open(store, request("a3"), jti: "r3", now: 2204), .muted(until: 2205))
            XCTAssertEqual(try store.auditEvents(limit: 100).count, rows, "a refusal writes nothing")
            XCTAssertNil(try store.approval(id: "a2"))
            // Another user is not muted; the user is again once the window is over.
            XCTAssertEqual(try open(store, request("b1", user: "bob"), jti: "r4", now: 1010), .opened(replaced: nil))
            let later = request("a4", created: 2205, expires: 2235)
            XCTAssertEqual(try open(store, later, jti: "r5", now: 2205), .opened(replaced: nil))
            XCTAssertEqual(
                try approvalRows(store).filter { $0.hasPrefix("approval_denied") },
                [
                    "approval_denied - a1 10.0.0.5 ws-alice"
                ])
        }
    }

    func testADecisionByAKeyRevokedSinceItWasVerifiedChangesNothing() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            try deviceKey(store, user: "alice", workstation: "ws-gone", status: .revoked)
            XCTAssertEqual(try decide(store, "a1", jti: "d1", workstation: "ws-gone"), .keyRefused(.keyRevoked))
            XCTAssertEqual(
                try store.decideApproval(
                    Self.decision("a1", approve: true, jti: "d2", workstation: "ws-alice", user: "bob", now: 1005),
                    audit: Self.decisionRows, now: 1005), .keyRefused(.keyChanged), "not bob's key")
            XCTAssertEqual(try store.approval(id: "a1")?.status, .pending)
            guard case let .decided(after) = try decide(store, "a1", jti: "d1") else { return XCTFail("not decided") }
            XCTAssertEqual(after.decidedKid, "dk-alice-ws-alice")
        }
    }

    func testClosingAnApprovalChangesItOnce() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try open(store, request("a1"), jti: "r1"), .opened(replaced: nil))
            let closed = try store.closeApproval(id: "a1", as: .withdrawn, audit: Self.withdrawRow, now: 1003)
            XCTAssertEqual(closed?.status, .withdrawn)
            XCTAssertEqual(closed?.decided, 1003)
            XCTAssertNil(try store.closeApproval(id: "a1", as: .expired, audit: Self.withdrawRow, now: 1004))
            XCTAssertNil(try store.closeApproval(id: "nope", as: .withdrawn, audit: Self.withdrawRow, now: 1004))
            XCTAssertEqual(try decide(store, "a1", jti: "d1"), .closed(.withdrawn))
            XCTAssertEqual(
                try approvalRows(store), ["approval_requested - a1 10.0.0.5 -", "approval_withdrawn - a1 - -"])
            // A decision is not a close: it names its key and workstation.
            XCTAssertEqual(try open(store, request("a2"), jti: "r2", now: 1005), .opened(replaced: nil))
            XCTAssertThrowsError(try store.closeApproval(id: "a2", as: .approved, audit: Self.withdrawRow, now: 1006))
            XCTAssertEqual(try store.approval(id: "a2")?.status, .pending)
        }
    }

    func testApprovalsAreListedByUserAndHostNewestFirst() throws {
        try onEachBackend { store, _ in
            var now: Int64 = 1000
            for (id, user, host) in [("a1", "alice", "web01"), ("b1", "bob", "web01"), ("a2", "alice", "db01")] {
                let made = request(id, user: user, host: host, created: now, expires: now + 30)
                XCTAssertEqual(try open(store, made, jti: "r-" + id, now: now), .opened(replaced: nil))
                XCTAssertNotNil(try store.closeApproval(id: id, as: .withdrawn, audit: Self.withdrawRow, now: now + 1))
                now += 10
            }
            XCTAssertEqual(try store.approvals(user: nil, host: nil, limit: 10).map(\.id), ["a2", "b1", "a1"])
            XCTAssertEqual(try store.approvals(user: "alice", host: nil, limit: 10).map(\.id), ["a2", "a1"])
            XCTAssertEqual(try store.approvals(user: nil, host: "web01", limit: 10).map(\.id), ["b1", "a1"])
            XCTAssertEqual(try store.approvals(user: "alice", host: "web01", limit: 10).map(\.id), ["a1"])
            XCTAssertEqual(try store.approvals(user: nil, host: nil, limit: 1).map(\.id), ["a2"])
        }
    }

    func testPruningRemovesApprovalsThatEndedMoreThanThirtyDaysAgo() throws {
        try onEachBackend { store, _ in
            let now = try store.databaseTime()
            let day: Int64 = 86_400
            let old = request("old", created: now - 31 * day, expires: now - 31 * day + 30)
            XCTAssertEqual(try open(store, old, jti: "r1", now: now - 31 * day), .opened(replaced: nil))
            XCTAssertEqual(try decide(store, "old", jti: "d1", now: now - 31 * day + 5).status, .approved)
            let recent = request("recent", created: now - 29 * day, expires: now - 29 * day + 30)
            XCTAssertEqual(try open(store, recent, jti: "r2", now: now - 29 * day), .opened(replaced: nil))
            XCTAssertNotNil(
                try store.closeApproval(id: "recent", as: .expired, audit: Self.withdrawRow, now: now - 29 * day))
            let pending = request("pending", created: now, expires: now + 30)
            XCTAssertEqual(try open(store, pending, jti: "r3", now: now), .opened(replaced: nil))
            _ = try store.prune(PrunePolicy())
            XCTAssertNil(try store.approval(id: "old"))
            XCTAssertEqual(try store.approvals(user: "alice", host: nil, limit: 10).map(\.id), ["pending", "recent"])
        }
    }

    /// Two stores on one database — two instances of a fleet — deciding one approval at
    /// once, and opening one for the same user from two hosts at once: one wins each time.
    func testTwoInstancesAtOnceDecideOnceAndOpenOne() throws {
        try onEachBackend { store, database in
            let other = try database.open()
            defer { other.close() }
            let stores: [any AuthStorage] = [store, other]
            for round in 0..<16 {
                let user = "u\(round)"
                XCTAssertEqual(
                    try open(store, request("a\(round)", user: user), jti: "r\(round)"), .opened(replaced: nil))
                for i in 0..<2 { try deviceKey(store, user: user, workstation: "ws\(i)") }
                let decisions = (0..<2).map {
                    Self.decision(
                        "a\(round)", approve: $0 == 0, jti: "d\(round)-\($0)", workstation: "ws\($0)", user: user,
                        now: 1005)
                }
                let decided = try racing(2) { i throws(StoreError) -> DecisionResult in
                    try stores[i].decideApproval(decisions[i], audit: Self.decisionRows, now: 1005)
                }
                XCTAssertEqual(decided.filter { if case .decided = $0 { return true } else { return false } }.count, 1)
                XCTAssertEqual(decided.filter { if case .closed = $0 { return true } else { return false } }.count, 1)

                let made = (0..<2).map { request("o\(round)-\($0)", user: "v\(round)", host: "host\($0)") }
                let rows = made.map(requestRow)
                let opened = try racing(2) { i throws(StoreError) -> ApprovalAdmission in
                    try stores[i].openApproval(
                        made[i], jti: made[i].id, keepUntil: 2000, muteSeconds: 1200, audit: rows[i], now: 1000)
                }
                XCTAssertEqual(opened.filter { $0 == .opened(replaced: nil) }.count, 1, "\(opened)")
                XCTAssertEqual(
                    opened.filter { if case .pendingElsewhere = $0 { return true } else { return false } }.count, 1)
                XCTAssertEqual(try store.pendingApprovals(user: "v\(round)", now: 1000).count, 1)
            }
        }
    }

    /// Runs `body` on `count` threads at once; their results in order.
    func racing<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws(StoreError) -> T) throws -> [T] {
        let box = RaceResults<T>(count: count)
        var threads: [WorkerThread] = []
        for i in 0..<count {
            let started = WorkerThread.start {
                do throws(StoreError) { box.set(i, .success(try body(i))) } catch { box.set(i, .failure(error)) }
            }
            threads.append(try started.get())
        }
        for thread in threads { thread.join() }
        return try box.all.map { try XCTUnwrap($0).get() }
    }
}

/// Each racing thread's result, under a lock.
///
/// `@unchecked Sendable`: every thread writes only its own slot, under `lock`; the results
/// are read after every thread was joined.
private final class RaceResults<T: Sendable>: @unchecked Sendable {
    private let lock = Lock()
    private var values: [Result<T, StoreError>?]

    init(count: Int) { values = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ value: Result<T, StoreError>) { lock.withLock { values[i] = value } }

    var all: [Result<T, StoreError>?] { lock.withLock { values } }
}

extension DecisionResult {
    /// The status the decision left, when it decided.
    var status: ApprovalStatus? {
        if case let .decided(record) = self { return record.status }
        return nil
    }
}

import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import XCTest

/// Uploaded offline records on each backend: rows at the receipt time, each record judged
/// against the grant it names, every jump, rewind or broken chain a visible row, and the
/// records of revoked and never-approved keys bounded or kept out.
final class OfflineRecordStoreTests: StoreBackendTestCase {
    let receipt: Int64 = 50_000

    func register(_ store: any AuthStorage, _ kid: String, user: String, status: KeyStatus = .active) throws {
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let key = RegisteredKey(kid: kid, user: user, host: "host1", jwk: maker.jwk, status: status, created: 10)
        XCTAssertEqual(
            try store.register(
                key, proofJTI: "proof-" + kid, keepUntil: 1000, audit: AuditEvent(event: .register, outcome: .deny),
                now: 10), .created)
    }

    /// Registers `kid` for `user` and records grant `gid` (issued 1,000, until 10,000) with its login.
    func granted(
        _ store: any AuthStorage, _ gid: String, kid: String = "k1", user: String = "alice", uses: Int,
        registering: Bool = true
    ) throws {
        if registering { try register(store, kid, user: user) }
        let grant = IssuedGrant(
            gid: gid, user: user, host: "host1", kid: kid, issued: 1000, notAfter: 10_000, uses: uses,
            services: ["sudo"], rule: 7)
        let claim = TokenClaim(
            kid: kid, user: user, host: "host1", jti: "login-" + gid, keepUntil: 500, allowed: [.active],
            effect: .offlineGrant(grant), audit: AuditEvent(event: .login, outcome: .deny, peer: "10.0.0.1"),
            time: grant.issued)
        XCTAssertEqual(try store.commit([.claim(claim)]), [.accepted])
    }

    func record(
        _ seq: Int64, gid: String = "g1", jti: String? = nil, previous: String? = nil, hash: String? = nil,
        at: Int64? = nil, kid: String = "k1", user: String = "alice"
    ) -> VerifiedOfflineRecord {
        VerifiedOfflineRecord(
            record: OfflineRecord(
                seq: seq, gid: gid, user: user, host: "host1", kid: kid, jti: jti ?? "j\(seq)", service: "sudo",
                at: at ?? (1000 + seq), previous: previous ?? (seq == 1 ? "" : "h\(seq - 1)")),
            lineHash: hash ?? "h\(seq)")
    }

    func upload(_ store: any AuthStorage, _ records: [VerifiedOfflineRecord], kid: String = "k1", now: Int64? = nil)
        throws -> OfflineUploadResult
    {
        // Through the batch, as the service writes them.
        let item = WriteItem.offlineRecords(
            OfflineUpload(records: records, kid: kid, peer: "10.0.0.1", now: now ?? receipt))
        guard case let .offlineStored(result)? = try store.commit([item]).first else {
            XCTFail("no offline outcome")
            return OfflineUploadResult()
        }
        return result
    }

    func offlineRows(_ store: any AuthStorage) throws -> [AuditRecord] {
        try store.auditRecords(AuditFilter(limit: 1000)).filter {
            $0.event.event == .offlineLogin || $0.event.event == .offlineGap
        }
    }

    func line(_ row: AuditRecord) -> String {
        "\(row.event.event.name) \(row.event.outcome.name) \(row.event.reason?.text ?? "-")"
    }

    func testRowsAreAtReceiptWithTheClaimedTimeAndEveryGapIsVisible() throws {
        try onEachBackend { store, _ in
            try granted(store, "g1", uses: 10)
            XCTAssertEqual(try upload(store, [record(2), record(1)]), OfflineUploadResult(held: [1, 2], stored: 2))
            // Sent again (the host lost the answer): acknowledged, nothing new.
            XCTAssertEqual(try upload(store, [record(1), record(2)]), OfflineUploadResult(held: [1, 2]))
            // Record 3 never came; record 5 does not chain; another record 5.
            XCTAssertEqual(try upload(store, [record(4)]), OfflineUploadResult(held: [4], stored: 1, flagged: 1))
            XCTAssertEqual(
                try upload(store, [record(5, previous: "zz")]), OfflineUploadResult(held: [5], stored: 1, flagged: 1))
            XCTAssertEqual(
                try upload(store, [record(5, jti: "j5b", hash: "h5b")]),
                OfflineUploadResult(held: [5], stored: 1, flagged: 1))
            // A gap row claiming 1970 is stored at the receipt time (pruning goes by that).
            XCTAssertEqual(
                try upload(store, [record(9, at: 0)]), OfflineUploadResult(held: [9], stored: 1, flagged: 1))
            let rows = try offlineRows(store)
            XCTAssertEqual(
                rows.map(line),
                [
                    "offline_login accept grant g1, record 1", "offline_login accept grant g1, record 2",
                    "offline_gap deny seq_jump: record 3 missing", "offline_login accept grant g1, record 4",
                    "offline_gap deny chain_broken: record 5 does not follow record 4 (changed or removed)",
                    "offline_login accept grant g1, record 5",
                    "offline_gap deny seq_stale: record 5 again, not the one held",
                    "offline_login accept grant g1, record 5",
                    "offline_gap deny seq_jump: records 6 to 8 missing",
                    "offline_login deny outside_window: grant g1, record 9",
                ])
            XCTAssertEqual(Set(rows.map(\.time)), [receipt])
            XCTAssertEqual(rows.map(\.event.claimedTime), [1001, 1002, 1004, 1004, 1005, 1005, 1005, 1005, 0, 0])
            XCTAssertEqual(rows[0].event.jti, "j1")
            XCTAssertEqual(rows[0].event.service, "sudo")
        }
    }

    func testAHugeSeqCostsOneRowAndTheGenuineRecordsAfterItAreStored() throws {
        try onEachBackend { store, _ in
            try granted(store, "g1", uses: 10)
            _ = try upload(store, [record(1), record(2)])
            let huge = OfflineRecord.maxSeq
            XCTAssertEqual(
                try upload(store, [record(huge, hash: "hx")]), OfflineUploadResult(held: [huge], stored: 1, flagged: 1))
            // The host's own records go on from 2: each one held and acknowledged, the rewind shown.
            XCTAssertEqual(try upload(store, [record(3)]), OfflineUploadResult(held: [3], stored: 1, flagged: 1))
            XCTAssertEqual(try upload(store, [record(4)]), OfflineUploadResult(held: [4], stored: 1))
            XCTAssertEqual(
                Array(try offlineRows(store).map(line).suffix(3)),
                [
                    "offline_gap deny seq_rewind: record 3 after record \(huge)",
                    "offline_login accept grant g1, record 3", "offline_login accept grant g1, record 4",
                ])
            XCTAssertEqual(try offlineRows(store).filter { $0.event.event == .offlineLogin }.count, 5)
        }
    }

    func testEachRecordIsJudgedAgainstTheGrantItNames() throws {
        try onEachBackend { store, _ in
            try granted(store, "g1", uses: 3)
            try granted(store, "gb", kid: "k2", user: "bob", uses: 3)
            let records = [
                record(1), record(2, gid: "nope"), record(3, gid: "gb"), record(4, at: 20_000), record(5, at: 60),
                record(6), record(7),
            ]
            XCTAssertEqual(try upload(store, records).stored, 7)
            XCTAssertEqual(
                try offlineRows(store).map(line),
                [
                    "offline_login accept grant g1, record 1", "offline_login deny no_grant: grant nope, record 2",
                    "offline_login deny no_grant: grant gb, record 3",
                    "offline_login deny outside_window: grant g1, record 4",
                    "offline_login deny outside_window: grant g1, record 5",
                    "offline_login deny over_uses: grant g1, record 6",
                    "offline_login deny over_uses: grant g1, record 7",
                ])
            // A withdrawn grant covers what came before its withdrawal, not after.
            try granted(store, "g2", uses: 5, registering: false)
            XCTAssertEqual(
                try store.withdrawGrants(host: "host1", user: "alice", admin: "root", peer: "local", now: 3000), 1)
            _ = try upload(store, [record(8, gid: "g2", at: 2000), record(9, gid: "g2", at: 4000)])
            XCTAssertEqual(
                try offlineRows(store).suffix(2).map(line),
                ["offline_login accept grant g2, record 8", "offline_login deny withdrawn: grant g2, record 9"])
        }
    }

    func testARevokedKeysRecordsAreEvidenceUpToItsGrantsUsesAndAPendingKeysAreNothing() throws {
        try onEachBackend { store, _ in
            try granted(store, "g1", uses: 3)
            XCTAssertEqual(try store.revoke(kid: "k1", now: 3000), .revoked)
            var seq: Int64 = 0
            for _ in 0..<10 {
                let batch = (0..<4).map { _ -> VerifiedOfflineRecord in
                    seq += 1
                    return record(seq, gid: seq % 4 == 0 ? "nope" : "g1")
                }
                _ = try upload(store, batch)
            }
            XCTAssertEqual(try upload(store, [record(41), record(42, gid: "nope")]).rejected, [41, 42])
            let rows = try offlineRows(store).filter { $0.event.event == .offlineLogin }
            XCTAssertEqual(
                rows.map(line),
                [
                    "offline_login deny after_revocation: grant g1, record 1",
                    "offline_login deny after_revocation: grant g1, record 2",
                    "offline_login deny after_revocation: grant g1, record 3",
                ])
            try register(store, "k9", user: "carol", status: .pending)
            XCTAssertEqual(
                try upload(store, [record(1, kid: "k9", user: "carol")], kid: "k9"), OfflineUploadResult(rejected: [1]))
            XCTAssertEqual(try store.auditRecords(AuditFilter(user: "carol", limit: 100)).count, 0)
        }
    }

    func testAKeysRowsPerWindowAreBounded() throws {
        try onEachBackend { store, _ in
            try granted(store, "g1", uses: 1000)
            var stored = 0
            for start in stride(from: Int64(1), to: 100, by: 16) {
                stored += try upload(store, (start..<(start + 16)).map { record($0) }).stored
            }
            XCTAssertEqual(stored, OfflineUpload.maxRowsPerKey)
            let later = try upload(store, [record(65)], now: receipt + OfflineUpload.rowWindow + 1)
            XCTAssertEqual(later.held, [65])
        }
    }
}

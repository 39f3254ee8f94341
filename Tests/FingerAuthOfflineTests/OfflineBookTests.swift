import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthOffline
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// One user's offline book over a real state directory and a real grant key: the grant kept,
/// the offline logins recorded in the signed log, and the refusals a person would be shown.
final class OfflineBookTests: OfflineStateTestCase {
    let signature: [UInt8] = [7, 7, 7]

    func login(service: String = "sudo", jti: String = "j", at wall: Int64? = nil)
        -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal>
    {
        do {
            return book.recordLogin(
                kid: kid, service: service, jti: jti, pins: try pins, now: clock(wall), sign: { _ in self.signature })
        } catch {
            return .failure(GrantRefusal("\(error)"))
        }
    }

    func refusal(_ result: Result<(grant: OfflineGrant, expires: Int64), GrantRefusal>) -> String? {
        if case let .failure(why) = result { return why.description }
        return nil
    }

    func usable(service: String = "sudo") throws -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal> {
        book.usable(kid: kid, service: service, pins: try pins, now: clock())
    }

    // MARK: - the grant

    func testNoGrantKeptIsNoReceiptAndNoOfflineLogin() throws {
        XCTAssertEqual(book.receipt(), .success(nil))
        XCTAssertEqual(refusal(try usable()), "no offline grant")
    }

    func testAKeptGrantIsWrittenRootOnlyWithTheClocksOfItsArrival() throws {
        let kept = try keepGrant()
        XCTAssertEqual(kept, grant())
        XCTAssertEqual(mode(paths.offlineGrant), 0o600)
        let receipt = try XCTUnwrap(try book.receipt().get())
        XCTAssertEqual(receipt.received, clock())
        XCTAssertEqual(receipt.gid, "g-1")
        XCTAssertEqual(receipt.unverifiedGrant, grant())
    }

    func testAKeptGrantIsUsableUntilItsEnd() throws {
        try keepGrant()
        let usable = try usable().get()
        XCTAssertEqual(usable.grant.gid, "g-1")
        XCTAssertEqual(usable.expires, now + 3600)
    }

    func testAGrantForAnotherUserIsNotKept() throws {
        let result = book.keep(try token(grant(user: "bob")), kid: kid, pins: try pins, now: clock())
        XCTAssertEqual(result, .failure(GrantRefusal("grant is for another user")))
        XCTAssertFalse(exists(paths.offlineGrant))
    }

    func testAGrantSignedByAKeyNotPinnedIsNotKept() throws {
        let stranger = try GrantSigningKey.generate()
        let result = book.keep(try token(grant(), signedBy: stranger), kid: kid, pins: try pins, now: clock())
        XCTAssertEqual(result, .failure(GrantRefusal("grant signed by a key this host does not pin")))
        XCTAssertFalse(exists(paths.offlineGrant))
    }

    func testAGrantWhoseSignatureWasChangedIsRefused() throws {
        let parts = try token(grant()).split(separator: ".").map(String.init)
        var signature = Array(parts[2])
        signature[10] = signature[10] == "A" ? "B" : "A"
        let forged = parts[0] + "." + parts[1] + "." + String(signature)
        let result = book.keep(forged, kid: kid, pins: try pins, now: clock())
        XCTAssertEqual(result, .failure(GrantRefusal("grant signature does not verify")))
    }

    func testDroppingTheGrantEndsOfflineLogins() throws {
        try keepGrant()
        book.drop()
        XCTAssertFalse(exists(paths.offlineGrant))
        XCTAssertEqual(refusal(try usable()), "no offline grant")
    }

    func testAGrantFileOthersCanReadIsRefusedByItsShortName() throws {
        try keepGrant()
        XCTAssertEqual(chmod(paths.offlineGrant, 0o644), 0)
        XCTAssertEqual(book.receipt(), .failure(GrantRefusal("offline-grant: mode 644 is too open")))
        XCTAssertEqual(refusal(try usable()), "offline-grant: mode 644 is too open")
    }

    func testAGrantFileThatDoesNotParseIsRefused() throws {
        put(paths.offlineGrant, "{\"grant\": 5}")
        XCTAssertEqual(book.receipt(), .failure(GrantRefusal("offline grant file does not parse")))
    }

    func testAGrantForAnotherServiceIsRefused() throws {
        try keepGrant()
        XCTAssertEqual(refusal(try usable(service: "login")), "grant is not for this service")
    }

    func testAClockFloorAheadOfTheClockRefusesTheGrant() throws {
        try keepGrant()
        ClockFloor(stateDirectory: root).raise(to: now + 7200)
        let why = try XCTUnwrap(refusal(try usable()))
        XCTAssertTrue(why.hasPrefix("clock behind the last time this host saw ("), why)
    }

    // MARK: - offline logins

    func testAnOfflineLoginAppendsASignedRecordAndRaisesTheFloor() throws {
        try keepGrant()
        let made = try login(jti: "first").get()
        XCTAssertEqual(made.expires, now + 3600)
        XCTAssertEqual(mode(paths.offlineLog), 0o600)
        let records = book.records()
        XCTAssertEqual(records.count, 1)
        let record = try XCTUnwrap(records.first?.record)
        XCTAssertEqual(
            record,
            OfflineRecord(
                seq: 1, gid: "g-1", user: user, host: host, kid: kid, jti: "first", service: "sudo", at: now,
                previous: ""))
        let jws = try CompactJWT(parsing: try XCTUnwrap(records.first?.line))
        XCTAssertEqual(jws.signature, signature)
        XCTAssertEqual(jws.header["typ"]?.stringValue, OfflineRecord.type)
        XCTAssertEqual(ClockFloor(stateDirectory: root).read(), .success(now))
    }

    func testEachRecordChainsToTheHashOfTheOneBefore() throws {
        try keepGrant()
        _ = try login(jti: "a").get()
        _ = try login(jti: "b").get()
        let records = book.records()
        XCTAssertEqual(records.map(\.record.seq), [1, 2])
        let hash = try XCTUnwrap(Digest.sha256(Array(records[0].line.utf8)).map(Base64URL.encode))
        XCTAssertEqual(records[1].record.previous, hash)
        XCTAssertEqual(text(paths.offlineLog), records.map { $0.line + "\n" }.joined())
    }

    func testAGrantIsUsedUpAfterItsUses() throws {
        try keepGrant(grant(uses: 2))
        _ = try login(jti: "1").get()
        _ = try login(jti: "2").get()
        XCTAssertEqual(refusal(login(jti: "3")), "grant used up (2 of 2 offline logins)")
        XCTAssertEqual(book.records().count, 2, "a refused login is not recorded")
    }

    func testAKeyThatDoesNotSignMakesNoLogin() throws {
        try keepGrant()
        let result = book.recordLogin(kid: kid, service: "sudo", jti: "j", pins: try pins, now: clock()) { _ in nil }
        XCTAssertEqual(refusal(result), "device key did not sign")
        XCTAssertTrue(book.records().isEmpty)
    }

    func testALogOthersCanReadIsNotBelievedAndNotWritten() throws {
        try keepGrant()
        _ = try login().get()
        XCTAssertEqual(chmod(paths.offlineLog, 0o640), 0)
        XCTAssertEqual(refusal(try usable()), "offline-log: mode 640 is too open")
        XCTAssertEqual(refusal(login(jti: "again")), "offline-log: mode 640 is too open")
    }

    func testALogHeldByAnotherLoginIsARefusalAfterTheWait() throws {
        try keepGrant()
        _ = try login().get()
        let fd = open(paths.offlineLog, O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(flock(fd, LOCK_EX), 0)
        XCTAssertEqual(refusal(login(jti: "second")), "offline-log: held by another login")
        XCTAssertEqual(book.records().count, 0, "nothing is read while the lock is held elsewhere")
    }

    // MARK: - what the authenticator holds

    func testMarkingRecordsSentLeavesTheOthersUnsent() throws {
        try keepGrant()
        for jti in ["a", "b", "c"] { _ = try login(jti: jti).get() }
        book.markSent(kid: kid, seqs: [1, 3])
        XCTAssertEqual(book.sent(), [AcknowledgedRecord(kid: kid, seq: 1), AcknowledgedRecord(kid: kid, seq: 3)])
        XCTAssertEqual(book.unsent().map(\.record.jti), ["b"])
        XCTAssertEqual(text(paths.offlineSent), "\(kid) 1\n\(kid) 3\n")
        XCTAssertEqual(mode(paths.offlineSent), 0o600)
    }

    func testAKidThatWouldBreakTheSentFileIsIgnored() {
        book.markSent(kid: "two words", seqs: [1])
        book.markSent(kid: "line\nbreak", seqs: [1])
        book.markSent(kid: "", seqs: [1])
        book.markSent(kid: kid, seqs: [])
        XCTAssertFalse(exists(paths.offlineSent))
    }

    func testUnsentIsOldestFirstAndBounded() throws {
        try keepGrant(grant(uses: 20))
        for n in 1...5 { _ = try login(jti: "j\(n)").get() }
        XCTAssertEqual(book.unsent(limit: 2).map(\.record.seq), [1, 2])
    }

    func testANewGrantCompactsTheAcknowledgedRecordsButTheLastOfEachKey() throws {
        try keepGrant()
        for jti in ["a", "b", "c"] { _ = try login(jti: jti).get() }
        book.markSent(kid: kid, seqs: [1, 2, 3])
        try keepGrant(grant(gid: "g-2"))
        XCTAssertEqual(book.records().map(\.record.seq), [3], "the next record chains to the last one")
        XCTAssertEqual(book.sent(), [AcknowledgedRecord(kid: kid, seq: 3)])
        _ = try login(jti: "d").get()
        XCTAssertEqual(book.records().map(\.record.seq), [3, 4])
    }
}

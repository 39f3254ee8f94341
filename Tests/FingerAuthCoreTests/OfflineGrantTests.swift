import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// A signature check that accepts exactly one signature: the decision logic around it is
/// under test here; ES256 itself is FingerAuthCrypto's (and the integration tests').
private struct OneSignature: GrantSignatureCheck {
    let good: [UInt8]
    func verifyES256(key: GrantKeyJWK, signature: [UInt8], data: [UInt8]) -> Bool { signature == good }
}

final class OfflineGrantTests: XCTestCase {
    let key = GrantKeyJWK(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32))
    let grant = OfflineGrant(
        gid: "g1", user: "alice", host: "laptop", kid: "k1", issuedAt: 1000, notAfter: 1000 + 8 * 3600,
        ttlSeconds: 8 * 3600, uses: 3, services: ["sudo", "login"])

    func token(_ grant: OfflineGrant, alg: String = "ES256", typ: String = OfflineGrant.type, kid: String = "gk")
        -> String
    {
        let header: JSONValue = .object([("alg", .string(alg)), ("typ", .string(typ)), ("kid", .string(kid))])
        return CompactJWT.serialize(
            signingInput: CompactJWT.signingInput(header: header, claims: grant.claims), signature: [9, 9])
    }

    func verify(_ token: String, user: String = "alice", host: String = "laptop", kid: String = "k1")
        -> Result<OfflineGrant, GrantRefusal>
    {
        guard let key else { return .failure(GrantRefusal("no key")) }
        return OfflineGrant.verified(
            token, keys: ["gk": key], check: OneSignature(good: [9, 9]), user: user, host: host, kid: kid)
    }

    func testAGrantVerifiesOnlyWithAPinnedKeyAndItsOwnBinding() {
        XCTAssertEqual(try verify(token(grant)).get(), grant)
        let cases: [(String, Result<OfflineGrant, GrantRefusal>)] = [
            ("grant header is not ES256 fingerauth-grant+jwt", verify(token(grant, alg: "RS256"))),
            ("grant header is not ES256 fingerauth-grant+jwt", verify(token(grant, typ: "JWT"))),
            ("grant signed by a key this host does not pin", verify(token(grant, kid: "other"))),
            ("grant is for another user", verify(token(grant), user: "bob")),
            ("grant is for another host", verify(token(grant), host: "desk")),
            ("grant is for another device key", verify(token(grant), kid: "k2")),
            ("grant is not a JWS", verify("a.b")),
        ]
        for (why, result) in cases {
            XCTAssertEqual(result, .failure(GrantRefusal(why)), why)
        }
        // A signature that is not the check's: refused.
        let unsigned = String(token(grant).dropLast(3)) + "AAA"
        XCTAssertEqual(verify(unsigned), .failure(GrantRefusal("grant signature does not verify")))
        // Names compare byte for byte: a canonically equivalent user name is another user.
        var kelvin = grant
        kelvin.user = "\u{212A}ate"
        XCTAssertEqual(verify(token(kelvin), user: "Kate"), .failure(GrantRefusal("grant is for another user")))
    }

    func testClaimsOutOfBoundsAreNoGrant() {
        XCTAssertNotNil(OfflineGrant(claims: grant.claims))
        var long = grant
        long.ttlSeconds = OfflineGrant.maxTTLSeconds + 1
        var none = grant
        none.uses = 0
        var many = grant
        many.uses = OfflineGrant.maxUses + 1
        var backwards = grant
        backwards.notAfter = grant.issuedAt
        var noService = grant
        noService.services = []
        for bad in [long, none, many, backwards, noService] { XCTAssertNil(OfflineGrant(claims: bad.claims)) }
        XCTAssertNil(
            OfflineGrant(
                claims: .object([("gid", .string("g")), ("sub", .string("alice")), ("services", .array([.integer(1)]))])
            ))
    }

    func reading(wall: Int64, boot: String = "b1", ms: Int64) -> GrantClockReading {
        GrantClockReading(wall: wall, bootID: boot, bootMilliseconds: ms)
    }

    func judge(_ now: GrantClockReading, latest: Int64 = 0, used: Int = 0, service: String = "sudo")
        -> Result<Int64, GrantRefusal>
    {
        OfflineJudgement.judge(
            grant, receipt: reading(wall: 1000, ms: 50_000), now: now, latestSeen: latest, usesSoFar: used,
            service: service)
    }

    func testAGrantIsJudgedByBothClocksAndAClockSetBackGainsNothing() {
        // One hour later by both clocks: seven hours left.
        XCTAssertEqual(judge(reading(wall: 4600, ms: 3_650_000)), .success(4600 + 7 * 3600))
        // The monotonic clock says 8 h, the wall clock 1 h (set back): over.
        XCTAssertEqual(
            judge(reading(wall: 4600, ms: 50_000 + 8 * 3_600_000)), .failure(GrantRefusal("grant lifetime over")))
        // The wall clock behind the arrival, or behind the last offline login: refused, whatever
        // the monotonic clock says.
        XCTAssertEqual(
            judge(reading(wall: 10, ms: 60_000)),
            .failure(GrantRefusal("clock behind the last time this host saw (1970-01-01 00:16:40 UTC)")))
        XCTAssertEqual(
            judge(reading(wall: 5000, ms: 60_000), latest: 20_000),
            .failure(GrantRefusal("clock behind the last time this host saw (1970-01-01 05:33:20 UTC)")))
        // At the last offline login's time, the hours are counted from the arrival to it.
        XCTAssertEqual(
            judge(reading(wall: 20_000, ms: 60_000), latest: 20_000),
            .success(min(grant.notAfter, 20_000 + 8 * 3600 - 19_000)))
        // Another boot: the monotonic clock says nothing; the wall clock decides.
        XCTAssertEqual(judge(reading(wall: 2000, boot: "b2", ms: 10)), .success(1000 + 8 * 3600))
        XCTAssertEqual(
            judge(reading(wall: 1000 + 8 * 3600, boot: "b2", ms: 10)), .failure(GrantRefusal("grant lifetime over")))
        // The same boot with a monotonic clock behind the arrival cannot be.
        XCTAssertEqual(
            judge(reading(wall: 2000, ms: 10)), .failure(GrantRefusal("monotonic clock behind the grant's arrival")))
    }

    func testAnotherBootWithTheClockSetBackBehindTheFloorIsRefused() {
        // The host saw 9,000 (an online answer, a sync) before it rebooted; the clock now says
        // 2,000: by the wall clock only 1,000 s went by since the grant came. Refused.
        let behind = OfflineJudgement.judge(
            grant, receipt: reading(wall: 1000, ms: 50_000), now: reading(wall: 2000, boot: "b2", ms: 10),
            latestSeen: 0, floor: 9000, usesSoFar: 0, service: "sudo")
        XCTAssertEqual(
            behind, .failure(GrantRefusal("clock behind the last time this host saw (1970-01-01 02:30:00 UTC)")))
        // At or past the floor the wall clock counts again, from the arrival.
        let at = OfflineJudgement.judge(
            grant, receipt: reading(wall: 1000, ms: 50_000), now: reading(wall: 9000, boot: "b2", ms: 10),
            latestSeen: 0, floor: 9000, usesSoFar: 0, service: "sudo")
        XCTAssertEqual(at, .success(1000 + 8 * 3600))
        let over = OfflineJudgement.judge(
            grant, receipt: reading(wall: 1000, ms: 50_000), now: reading(wall: 1000 + 8 * 3600, boot: "b2", ms: 10),
            latestSeen: 0, floor: 1000 + 8 * 3600, usesSoFar: 0, service: "sudo")
        XCTAssertEqual(over, .failure(GrantRefusal("grant lifetime over")))
    }

    func testTheGrantsEndUsesAndServicesBind() {
        var short = grant
        short.notAfter = 2000
        let early = OfflineJudgement.judge(
            short, receipt: reading(wall: 1000, ms: 50_000), now: reading(wall: 1500, ms: 550_000), latestSeen: 0,
            usesSoFar: 0, service: "sudo")
        XCTAssertEqual(early, .success(2000))
        let late = OfflineJudgement.judge(
            short, receipt: reading(wall: 1000, ms: 50_000), now: reading(wall: 2000, ms: 1_050_000), latestSeen: 0,
            usesSoFar: 0, service: "sudo")
        XCTAssertEqual(late, .failure(GrantRefusal("grant expired")))
        XCTAssertEqual(judge(reading(wall: 1100, ms: 150_000), used: 2), .success(1100 + 8 * 3600 - 100))
        XCTAssertEqual(
            judge(reading(wall: 1100, ms: 150_000), used: 3),
            .failure(GrantRefusal("grant used up (3 of 3 offline logins)")))
        XCTAssertEqual(
            judge(reading(wall: 1100, ms: 150_000), service: "sshd"),
            .failure(GrantRefusal("grant is not for this service")))
        var any = grant
        any.services = ["*"]
        XCTAssertTrue(any.covers(service: "sshd"))
    }

    func testTheOfflineLineReadsBackAndNothingElseIsOne() {
        let line = HelperMessage.offline(jti: "j1", kid: "k1", grant: "g1", expires: 1_796_565_600, cause: "no-route")
        XCTAssertEqual(line.line, "OFFLINE j1 k1 g1 1796565600 no-route")
        XCTAssertEqual(HelperMessage(line: line.line), line)
        for bad in [
            "OFFLINE j1 k1 g1", "OFFLINE j1 k1 g1 soon", "OFFLINE j1 k1 g1 -5 refused", "OFFLINE j1 k1 g1 0 refused",
            "OFFLINE  k1 g1 5 refused", "OFFLINE j1 k1 g1 5", "OFFLINE j1 k1 g1 5 refused extra", "OFFLINE j1 k1 g1 5 ",
        ] {
            XCTAssertNil(HelperMessage(line: bad), bad)
        }
    }

    func testExtremeClocksAndRecordNumbersAreRefusedNotTrapped() {
        let far = OfflineJudgement.judge(
            grant, receipt: reading(wall: Int64.min, ms: Int64.min), now: reading(wall: Int64.max, ms: Int64.max),
            latestSeen: 0, usesSoFar: 0, service: "sudo")
        XCTAssertEqual(far, .failure(GrantRefusal("clocks out of range")))
        let record = OfflineRecord(
            seq: OfflineRecord.maxSeq, gid: "g", user: "alice", host: "h", kid: "k", jti: "j", service: "sudo", at: 5,
            previous: "")
        XCTAssertEqual(OfflineRecord(claims: record.claims), record)
        var beyond = record
        beyond.seq = OfflineRecord.maxSeq + 1
        XCTAssertNil(OfflineRecord(claims: beyond.claims))
        beyond = record
        beyond.at = -1
        XCTAssertNil(OfflineRecord(claims: beyond.claims))
    }

    func testUTCTimeToTheMinute() {
        XCTAssertEqual(UTCTime.minutes(0), "1970-01-01 00:00 UTC")
        XCTAssertEqual(UTCTime.minutes(1_796_565_600), "2026-12-06 14:00 UTC")
        XCTAssertEqual(UTCTime.minutes(1_709_251_140), "2024-02-29 23:59 UTC")
        XCTAssertEqual(UTCTime.minutes(951_868_800), "2000-03-01 00:00 UTC")
        XCTAssertEqual(UTCTime.seconds(1_709_251_199), "2024-02-29 23:59:59")
        XCTAssertEqual(UTCTime.seconds(-1), "1969-12-31 23:59:59")
    }
}

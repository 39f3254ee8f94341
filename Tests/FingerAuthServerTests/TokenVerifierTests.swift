import FingerAuthCore
import FingerAuthCrypto
import FingerAuthServer
import XCTest

/// The login verification rules of DESIGN.md, one refusal at a time, with a fake clock.
final class TokenVerifierTests: XCTestCase {
    var clock = FakeClock()
    var keys = FakeKeys()
    var replay = FakeReplay()
    var alice: TokenMaker?
    var other: TokenMaker?

    override func setUpWithError() throws {
        clock = FakeClock()
        keys = FakeKeys()
        replay = FakeReplay()
        alice = try XCTUnwrap(TokenMaker(TestKeys.alice))
        other = try XCTUnwrap(TokenMaker(TestKeys.other))
        let a = try XCTUnwrap(alice)
        keys.keys[a.kid] = RegisteredKey(kid: a.kid, user: "alice", host: "host1", jwk: a.jwk, status: .active, created: 0)
    }

    var verifier: TokenVerifier {
        TokenVerifier(policy: VerifierPolicy(audience: "aud", maxTTL: 300, skew: 30), clock: clock, keys: keys, replay: replay)
    }

    var now: Int64 { clock.current }

    func refusal(_ token: String) -> Refusal? { verifier.verifyLogin(token).refusal }

    func claims(_ changes: [(String, JSONValue?)] = [], ttl: Int64 = 30) -> [(String, JSONValue)] {
        var list = TokenMaker.claims(now: now, ttl: ttl)
        for (name, value) in changes {
            list.removeAll { $0.0 == name }
            if let value { list.append((name, value)) }
        }
        return list
    }

    func testValidTokenIsAcceptedWithItsFacts() throws {
        let a = try XCTUnwrap(alice)
        let result = verifier.verifyLogin(a.token(claims()))
        XCTAssertNil(result.refusal)
        XCTAssertEqual(result.facts, TokenFacts(sub: "alice", iss: "host1", kid: a.kid, jti: "jti-1"))
    }

    func testReplayIsRefusedAndRefusalsDoNotBurnTheJTI() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertEqual(refusal(a.token(claims([("aud", .string("nope"))]))), .audience)
        let token = a.token(claims())
        XCTAssertNil(refusal(token))
        XCTAssertEqual(refusal(token), .replayed)
    }

    func testAlgorithmsOtherThanRS256AreRefused() throws {
        let a = try XCTUnwrap(alice)
        for alg in ["none", "HS256", "RS512", "rs256", "PS256", "ES256", ""] {
            XCTAssertEqual(refusal(a.token(claims(), header: a.header(alg: alg))), .algorithm, alg)
        }
        let noAlg = JSONValue.object([("typ", .string("JWT")), ("kid", .string(a.kid))])
        XCTAssertEqual(refusal(a.token(claims(), header: noAlg)), .algorithm)
        let unsigned = String(decoding: CompactJWT.signingInput(header: a.header(alg: "none"), claims: .object(claims())),
                              as: UTF8.self) + "."
        XCTAssertEqual(refusal(unsigned), .algorithm)
    }

    func testHeaderRules() throws {
        let a = try XCTUnwrap(alice)
        let jose = JSONValue.object([("alg", .string("RS256")), ("typ", .string("JOSE")), ("kid", .string(a.kid))])
        XCTAssertEqual(refusal(a.token(claims(), header: jose)), .type)
        XCTAssertEqual(refusal(a.token(claims(), header: a.header(extra: [("crit", .array([.string("exp")]))]))), .critical)
        let noKid = JSONValue.object([("alg", .string("RS256"))])
        XCTAssertEqual(refusal(a.token(claims(), header: noKid)), .missingKid)
        let noTyp = JSONValue.object([("alg", .string("RS256")), ("kid", .string(a.kid))])
        XCTAssertNil(refusal(a.token(claims(), header: noTyp)))
    }

    func testShapeRules() throws {
        let a = try XCTUnwrap(alice)
        let token = a.token(claims())
        XCTAssertEqual(refusal(token + ".x"), .malformed)
        XCTAssertEqual(refusal(String(token.prefix(while: { $0 != "." }))), .malformed)
        XCTAssertEqual(refusal(" " + token), .malformed)
        XCTAssertEqual(refusal(token + "="), .malformed)
        XCTAssertEqual(refusal(String(repeating: "a", count: 9000)), .tooLarge)
        XCTAssertEqual(refusal(""), .malformed)
    }

    func testKeyBinding() throws {
        let a = try XCTUnwrap(alice)
        let o = try XCTUnwrap(other)
        XCTAssertEqual(refusal(o.token(claims())), .unknownKid)
        XCTAssertEqual(refusal(o.token(claims(), header: o.header(kid: a.kid))), .signature)
        XCTAssertEqual(refusal(a.token(claims([("sub", .string("bob"))]))), .kidNotForSubject)
        XCTAssertEqual(refusal(a.token(claims([("iss", .string("host2"))]))), .kidNotForIssuer)
        XCTAssertEqual(refusal(a.token(claims([("sub", nil)]))), .missingSubject)
        XCTAssertEqual(refusal(a.token(claims([("iss", .integer(3))]))), .missingIssuer)
        keys.keys[a.kid]?.status = .revoked
        XCTAssertEqual(refusal(a.token(claims())), .keyRevoked)
    }

    func testSignatureCoversHeaderAndClaims() throws {
        let a = try XCTUnwrap(alice)
        let parts = a.token(claims()).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let forged = Base64URL.encode(JSONEncoding.encodeBytes(.object(claims([("jti", .string("other"))]))))
        XCTAssertEqual(refusal([parts[0], forged, parts[2]].joined(separator: ".")), .signature)
        XCTAssertEqual(refusal([parts[0], parts[1], ""].joined(separator: ".")), .signature)
        XCTAssertEqual(refusal([parts[0], parts[1], Base64URL.encode([UInt8](repeating: 0, count: 256))].joined(separator: ".")), .signature)
    }

    func testExpiryHonoursSkewExactly() throws {
        let a = try XCTUnwrap(alice)
        let start = now
        let lastGood = a.token(TokenMaker.claims(now: start, ttl: 30, jti: "a"))
        clock.current = start + 30 + 29
        XCTAssertNil(refusal(lastGood))
        let firstBad = a.token(TokenMaker.claims(now: start, ttl: 30, jti: "b"))
        clock.current = start + 30 + 30
        XCTAssertEqual(refusal(firstBad), .expired)
    }

    func testNotBeforeAndIssuedAtInTheFuture() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertNil(refusal(a.token(claims([("nbf", .integer(now + 30)), ("jti", .string("n1"))]))))
        XCTAssertEqual(refusal(a.token(claims([("nbf", .integer(now + 31))]))), .notYetValid)
        XCTAssertEqual(refusal(a.token(claims([("iat", .integer(now + 31)), ("exp", .integer(now + 60))]))), .issuedInFuture)
        XCTAssertEqual(refusal(a.token(claims([("nbf", .string("soon"))]))), .timeClaim)
    }

    func testTimeClaimsMustBeIntegers() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertEqual(refusal(a.token(claims([("exp", nil)]))), .timeClaim)
        XCTAssertEqual(refusal(a.token(claims([("iat", nil)]))), .timeClaim)
        XCTAssertEqual(refusal(a.token(claims([("exp", .number("1.8e9"))]))), .timeClaim)
        XCTAssertEqual(refusal(a.token(claims([("exp", .number("\(now + 10).5"))]))), .timeClaim)
        XCTAssertEqual(refusal(a.token(claims([("exp", .string("\(now + 10)"))]))), .timeClaim)
        XCTAssertEqual(refusal(a.token(claims([("exp", .number("99999999999999999999"))]))), .timeClaim)
    }

    func testLifetimeLimits() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertNil(refusal(a.token(claims([("jti", .string("t300"))], ttl: 300))))
        XCTAssertEqual(refusal(a.token(claims(ttl: 301))), .ttlTooLong)
        XCTAssertEqual(refusal(a.token(claims([("iat", .integer(now + 31))], ttl: 30))), .issuedInFuture)
        XCTAssertEqual(refusal(a.token(claims([("iat", .integer(now + 10)), ("exp", .integer(now + 10))]))), .lifetime)
        XCTAssertEqual(refusal(a.token(claims([("iat", .integer(Int64.min)), ("exp", .integer(now + 10))]))), .lifetime)
    }

    func testAudience() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertNil(refusal(a.token(claims([("aud", .array([.string("x"), .string("aud")])), ("jti", .string("au1"))]))))
        XCTAssertEqual(refusal(a.token(claims([("aud", .string("other"))]))), .audience)
        XCTAssertEqual(refusal(a.token(claims([("aud", nil)]))), .audience)
        XCTAssertEqual(refusal(a.token(claims([("aud", .array([.string("aud"), .integer(1)]))]))), .audience)
        XCTAssertEqual(refusal(a.token(claims([("aud", .array([]))]))), .audience)
    }

    func testJTI() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertEqual(refusal(a.token(claims([("jti", nil)]))), .missingJTI)
        XCTAssertEqual(refusal(a.token(claims([("jti", .string(""))]))), .badJTI)
        XCTAssertEqual(refusal(a.token(claims([("jti", .integer(5))]))), .badJTI)
        XCTAssertEqual(refusal(a.token(claims([("jti", .string("has space"))]))), .badJTI)
        XCTAssertEqual(refusal(a.token(claims([("jti", .string(String(repeating: "j", count: 129)))]))), .badJTI)
        XCTAssertNil(refusal(a.token(claims([("jti", .string(String(repeating: "j", count: 128)))]))))
    }

    func testStoreFailureIsUnavailableNotAccepted() throws {
        let a = try XCTUnwrap(alice)
        keys.failing = true
        XCTAssertEqual(refusal(a.token(claims())), .unavailable)
    }

    func testReplayEntriesArePurgedOnlyLongAfterExpiry() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertNil(refusal(a.token(claims([("jti", .string("old"))]))))
        clock.current += 1000
        XCTAssertNil(refusal(a.token(claims([("jti", .string("new"))]))))
        XCTAssertNil(replay.seen["old"])
        XCTAssertNotNil(replay.seen["new"])
    }

    func testProofMustBeSignedByTheNewKeyForThisUserAndHost() throws {
        let o = try XCTUnwrap(other)
        let a = try XCTUnwrap(alice)
        let good = o.token(TokenMaker.claims(now: now, sub: "bob", iss: "host1", jti: "p1"))
        XCTAssertNil(verifier.verifyProof(good, jwk: o.jwk, user: "bob", host: "host1").refusal)
        let wrongKid = o.token(TokenMaker.claims(now: now, sub: "bob", jti: "p2"), header: o.header(kid: a.kid))
        XCTAssertEqual(verifier.verifyProof(wrongKid, jwk: o.jwk, user: "bob", host: "host1").refusal, .kidNotThumbprint)
        let signedByOther = a.token(TokenMaker.claims(now: now, sub: "bob", jti: "p3"), header: a.header(kid: o.kid))
        XCTAssertEqual(verifier.verifyProof(signedByOther, jwk: o.jwk, user: "bob", host: "host1").refusal, .signature)
        let forCarol = o.token(TokenMaker.claims(now: now, sub: "carol", jti: "p4"))
        XCTAssertEqual(verifier.verifyProof(forCarol, jwk: o.jwk, user: "bob", host: "host1").refusal, .wrongSubject)
        let otherHost = o.token(TokenMaker.claims(now: now, sub: "bob", iss: "host2", jti: "p5"))
        XCTAssertEqual(verifier.verifyProof(otherHost, jwk: o.jwk, user: "bob", host: "host1").refusal, .wrongIssuer)
        XCTAssertEqual(verifier.verifyProof(good, jwk: o.jwk, user: "bob", host: "host1").refusal, .replayed)
    }
}

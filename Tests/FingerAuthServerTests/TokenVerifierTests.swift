import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthTransport
import XCTest

/// The verification rules (docs/reference/http-api.md, "Token types and verification"), one
/// refusal at a time, with a fake clock: what is refused before the signature verified
/// (unverified: the sender learns nothing) and what after (verified: the key holder hears the
/// reason, and it counts against the user).
final class TokenVerifierTests: XCTestCase {
    var clock = FakeClock()
    var keys = FakeKeys()
    var alice: TokenMaker?
    var other: TokenMaker?

    override func setUpWithError() throws {
        clock = FakeClock()
        keys = FakeKeys()
        alice = try XCTUnwrap(TokenMaker(TestKeys.alice))
        other = try XCTUnwrap(TokenMaker(TestKeys.other))
        let a = try XCTUnwrap(alice)
        keys.keys[a.kid] = RegisteredKey(
            kid: a.kid, user: "alice", host: "host1", jwk: a.jwk, status: .active, created: 0)
    }

    var verifier: TokenVerifier {
        TokenVerifier(
            policy: VerifierPolicy(audience: "aud", maxTTL: 300, skew: 30), clock: clock, keys: keys,
            crypto: OpenSSLAuthenticatorCrypto())
    }

    var now: Int64 { clock.current }

    /// The refusal of `token` as a login token, verified or not; nil when valid.
    func refusal(_ token: String, _ purpose: TokenPurpose = .login) -> Refusal? {
        switch verifier.check(token, for: purpose) {
        case let .unverified(refusal, _), let .refused(refusal, _, _): return refusal
        case .valid: return nil
        case .unavailable: return .unavailable
        }
    }

    /// "unverified", "refused" or "valid".
    func kind(_ token: String, _ purpose: TokenPurpose = .login) -> String {
        switch verifier.check(token, for: purpose) {
        case .unverified: return "unverified"
        case .refused: return "refused"
        case .valid: return "valid"
        case .unavailable: return "unavailable"
        }
    }

    func claims(_ changes: [(String, JSONValue?)] = [], ttl: Int64 = 30) -> [(String, JSONValue)] {
        var list = TokenMaker.claims(now: now, ttl: ttl)
        for (name, value) in changes {
            list.removeAll { $0.0 == name }
            if let value { list.append((name, value)) }
        }
        return list
    }

    func testValidTokenCarriesTheKeysIdentityAndItsWindow() throws {
        let a = try XCTUnwrap(alice)
        guard case let .valid(token, facts) = verifier.check(a.token(claims()), for: .login) else {
            return XCTFail("not valid")
        }
        XCTAssertEqual(facts, TokenFacts(sub: "alice", iss: "host1", kid: a.kid, jti: "jti-1"))
        XCTAssertEqual(
            [token.identity.user, token.identity.host, token.identity.kid, token.jti],
            ["alice", "host1", a.kid, "jti-1"])
        XCTAssertEqual(token.keepUntil, now + 30 + ReplayWindow.maxSkew)
    }

    func testAnAgentsClientServiceIsCarriedApartFromTheService() throws {
        let a = try XCTUnwrap(alice)
        let agent = claims().map { $0.0 == "service" ? ("service", JSONValue.string("fingerauth-agent")) : $0 }
        guard
            case let .valid(token, _) = verifier.check(
                a.token(agent + [("client_service", .string("swaylock"))]), for: .login)
        else {
            return XCTFail("not valid")
        }
        XCTAssertEqual(token.service, "fingerauth-agent")
        XCTAssertEqual(token.clientService, "swaylock")
        guard case let .valid(plain, _) = verifier.check(a.token(claims()), for: .login) else {
            return XCTFail("not valid")
        }
        XCTAssertNil(plain.clientService)
        for bad: JSONValue in [
            .integer(1), .string(""), .string(String(repeating: "x", count: 65)), .string("a\u{1}b"),
        ] {
            XCTAssertEqual(refusal(a.token(agent + [("client_service", bad)])), .badService, "\(bad)")
        }
    }

    /// fingerauthd takes a service name by the same rule the module maps to and the helper
    /// and the agent check (`ServiceName`): what one side sends, the other accepts.
    func testTheServiceClaimFollowsTheOneServiceNameRule() throws {
        let a = try XCTUnwrap(alice)
        let names = [
            "sudo", "sshd", "fa-test", "gdm-password", "x", String(repeating: "s", count: 64),
            String(repeating: "s", count: 65), "", "su do", "caf\u{E9}", "tab\there", "a\u{7F}", "fa-caf_",
        ]
        for name in names {
            let token = a.token(claims().map { $0.0 == "service" ? ("service", JSONValue.string(name)) : $0 })
            let accepted: Bool
            if case .valid = verifier.check(token, for: .login) { accepted = true } else { accepted = false }
            XCTAssertEqual(accepted, ServiceName.isValid(name), name)
            XCTAssertEqual(ServiceName.isValid(ServiceName.claim(name)), true, "the module's mapping of \(name)")
        }
    }

    func testAlgorithmsOtherThanRS256AreRefusedUnverified() throws {
        let a = try XCTUnwrap(alice)
        for alg in ["none", "HS256", "RS512", "rs256", "PS256", "ES256", ""] {
            XCTAssertEqual(refusal(a.token(claims(), header: a.header(alg: alg))), .algorithm, alg)
            XCTAssertEqual(kind(a.token(claims(), header: a.header(alg: alg))), "unverified", alg)
        }
        let noAlg = JSONValue.object([("typ", .string("JWT")), ("kid", .string(a.kid))])
        XCTAssertEqual(refusal(a.token(claims(), header: noAlg)), .algorithm)
        let unsigned =
            String(
                decoding: CompactJWT.signingInput(header: a.header(alg: "none"), claims: .object(claims())),
                as: UTF8.self) + "."
        XCTAssertEqual(refusal(unsigned), .algorithm)
    }

    func testEachKindOfTokenIsTakenOnlyWhereItBelongs() throws {
        let a = try XCTUnwrap(alice)
        let login = a.token(claims())
        let revocation = a.revocation(claims())
        let proof = a.proof(claims())
        let asProof = TokenPurpose.proof(jwk: a.jwk, kid: a.kid, user: "alice", host: "host1")
        XCTAssertEqual(kind(login), "valid")
        XCTAssertEqual(kind(revocation, .revocation(kid: a.kid)), "valid")
        XCTAssertEqual(kind(proof, asProof), "valid")
        // A captured login token cannot revoke; a revocation token or a proof is not a login.
        XCTAssertEqual(refusal(login, .revocation(kid: a.kid)), .type)
        XCTAssertEqual(refusal(revocation), .type)
        XCTAssertEqual(refusal(proof), .type)
        XCTAssertEqual(refusal(login, asProof), .type)
        XCTAssertEqual(kind(revocation), "unverified")
        let noTyp = JSONValue.object([("alg", .string("RS256")), ("kid", .string(a.kid))])
        XCTAssertEqual(refusal(a.token(claims(), header: noTyp)), .type)
        let jose = a.token(claims(), header: a.header(typ: "JOSE"))
        XCTAssertEqual(refusal(jose), .type)
    }

    func testHeaderRules() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertEqual(
            refusal(a.token(claims(), header: a.header(extra: [("crit", .array([.string("exp")]))]))), .critical)
        let noKid = JSONValue.object([("alg", .string("RS256")), ("typ", .string("JWT"))])
        XCTAssertEqual(refusal(a.token(claims(), header: noKid)), .missingKid)
    }

    func testAKidThatIsNoThumbprintIsRefusedBeforeAnyLookup() throws {
        let a = try XCTUnwrap(alice)
        keys.failing = true // a lookup would answer "unavailable"
        for bad in [
            "REAL\u{0000}x", a.kid + "\u{0000}", String(a.kid.dropLast()) + "\u{0000}", "../../etc/passwd",
            String(a.kid.dropLast()), a.kid + "A", String(a.kid.dropLast()) + "=", String(a.kid.dropLast()) + "é",
        ] {
            XCTAssertEqual(refusal(a.token(claims(), header: a.header(kid: bad))), .badKid, bad.debugDescription)
        }
        XCTAssertTrue(TokenVerifier.isWellFormedKid(a.kid))
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

    func testOnlyTheRegisteredKeysSignatureMakesARefusalVerified() throws {
        let a = try XCTUnwrap(alice)
        let o = try XCTUnwrap(other)
        XCTAssertEqual(refusal(o.token(claims())), .unknownKid)
        XCTAssertEqual(kind(o.token(claims())), "unverified")
        // Another key's signature under alice's kid: unverified, whatever it claims.
        XCTAssertEqual(refusal(o.token(claims([("aud", .string("x"))]), header: o.header(kid: a.kid))), .signature)
        XCTAssertEqual(kind(o.token(claims(), header: o.header(kid: a.kid))), "unverified")
        // Alice's own key, refused for the token's claims: verified.
        XCTAssertEqual(refusal(a.token(claims([("sub", .string("bob"))]))), .kidNotForSubject)
        XCTAssertEqual(refusal(a.token(claims([("iss", .string("host2"))]))), .kidNotForIssuer)
        XCTAssertEqual(refusal(a.token(claims([("sub", nil)]))), .missingSubject)
        XCTAssertEqual(refusal(a.token(claims([("iss", .integer(3))]))), .missingIssuer)
        XCTAssertEqual(kind(a.token(claims([("aud", .string("x"))]))), "refused")
        keys.keys[a.kid]?.status = .revoked
        XCTAssertEqual(refusal(a.token(claims())), .keyRevoked)
        XCTAssertEqual(kind(a.token(claims())), "refused")
    }

    func testIdentitiesAreComparedByteForByte() throws {
        let a = try XCTUnwrap(alice)
        keys.keys[a.kid]?.user = "kate"
        let kelvin = "\u{212A}ate"
        XCTAssertTrue(kelvin == "Kate", "Swift's == treats the Kelvin sign as K: the reason for this test")
        XCTAssertEqual(refusal(a.token(claims([("sub", .string(kelvin))]))), .invalidUserName, "not even a user name")
        XCTAssertEqual(kind(a.token(claims([("sub", .string(kelvin))]))), "unverified")
        XCTAssertNil(refusal(a.token(claims([("sub", .string("kate"))]))))
        keys.keys[a.kid]?.host = "caf\u{00E9}"
        XCTAssertTrue("cafe\u{0301}" == "caf\u{00E9}")
        XCTAssertEqual(
            refusal(a.token(claims([("sub", .string("kate")), ("iss", .string("cafe\u{0301}"))]))), .kidNotForIssuer)
    }

    func testALoginForANameTheRuleRefusesIsRefusedBeforeItsKey() throws {
        let a = try XCTUnwrap(alice)
        // A key stored under "Carol" before the rule: its holder's logins no longer pass.
        keys.keys[a.kid]?.user = "Carol"
        for name in ["Carol", "carol.", ".carol", "ca..rol", String(repeating: "c", count: 33)] {
            XCTAssertEqual(refusal(a.token(claims([("sub", .string(name))]))), .invalidUserName, name)
        }
        // The key holder may still revoke such a key.
        XCTAssertNil(refusal(a.revocation(claims([("sub", .string("Carol"))])), .revocation(kid: a.kid)))
    }

    func testSignatureCoversHeaderAndClaims() throws {
        let a = try XCTUnwrap(alice)
        let parts = a.token(claims()).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let forged = Base64URL.encode(JSONEncoding.encodeBytes(.object(claims([("jti", .string("other"))]))))
        XCTAssertEqual(refusal([parts[0], forged, parts[2]].joined(separator: ".")), .signature)
        XCTAssertEqual(refusal([parts[0], parts[1], ""].joined(separator: ".")), .signature)
        XCTAssertEqual(
            refusal([parts[0], parts[1], Base64URL.encode([UInt8](repeating: 0, count: 256))].joined(separator: ".")),
            .signature)
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
        XCTAssertEqual(
            refusal(a.token(claims([("iat", .integer(now + 31)), ("exp", .integer(now + 60))]))), .issuedInFuture)
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
        XCTAssertEqual(
            refusal(a.token(claims([("iat", .integer(Int64.min)), ("exp", .integer(now + 10))]))), .lifetime)
    }

    func testAudience() throws {
        let a = try XCTUnwrap(alice)
        XCTAssertNil(
            refusal(a.token(claims([("aud", .array([.string("x"), .string("aud")])), ("jti", .string("au1"))]))))
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

    func testRevocationTokenMustBeSignedByTheKeyItNames() throws {
        let a = try XCTUnwrap(alice)
        let o = try XCTUnwrap(other)
        keys.keys[o.kid] = RegisteredKey(
            kid: o.kid, user: "bob", host: "host1", jwk: o.jwk, status: .pending, created: 0)
        // Bob's own token for alice's key: unverified, a kid mismatch.
        XCTAssertEqual(refusal(o.revocation(claims([("sub", .string("bob"))])), .revocation(kid: a.kid)), .kidMismatch)
        // A pending key may be withdrawn by its holder; a revoked one is refused (verified).
        XCTAssertNil(refusal(o.revocation(claims([("sub", .string("bob"))])), .revocation(kid: o.kid)))
        keys.keys[o.kid]?.status = .revoked
        XCTAssertEqual(refusal(o.revocation(claims([("sub", .string("bob"))])), .revocation(kid: o.kid)), .keyRevoked)
    }

    func testProofMustBeSignedByTheNewKeyForThisUserAndHost() throws {
        let o = try XCTUnwrap(other)
        let a = try XCTUnwrap(alice)
        func check(_ token: String) -> Refusal? {
            refusal(token, .proof(jwk: o.jwk, kid: o.kid, user: "bob", host: "host1"))
        }
        XCTAssertNil(check(o.proof(TokenMaker.claims(now: now, sub: "bob", iss: "host1", jti: "p1"))))
        XCTAssertEqual(
            check(
                o.token(
                    TokenMaker.claims(now: now, sub: "bob", jti: "p2"),
                    header: o.header(kid: a.kid, typ: TokenType.registrationProof))), .kidNotThumbprint)
        XCTAssertEqual(
            check(
                a.token(
                    TokenMaker.claims(now: now, sub: "bob", jti: "p3"),
                    header: a.header(kid: o.kid, typ: TokenType.registrationProof))), .signature)
        XCTAssertEqual(check(o.proof(TokenMaker.claims(now: now, sub: "carol", jti: "p4"))), .wrongSubject)
        XCTAssertEqual(check(o.proof(TokenMaker.claims(now: now, sub: "bob", iss: "host2", jti: "p5"))), .wrongIssuer)
    }
}

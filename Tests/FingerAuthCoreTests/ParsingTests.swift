import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

final class JSONParserTests: XCTestCase {
    func testParsesNestedValues() throws {
        let v = try JSONParser().parse(#"{"a":[1,-2.5e3,true,null],"b":"x\u00e9\ud83d\ude00\n"}"#)
        XCTAssertEqual(v["a"], .array([.number("1"), .number("-2.5e3"), .bool(true), .null]))
        XCTAssertEqual(v["b"], .string("xé😀\n"))
    }

    func testRefusesWhatIsNotStrictJSON() {
        for text in [
            "", "{", "{\"a\":1,}", "[01]", "{\"a\":1}x", "'a'", "{\"a\":1,\"a\":2}", "\"\\ud800\"", "[1.]",
            "\"\u{01}\"", "nul",
        ] {
            XCTAssertThrowsError(try JSONParser().parse(text), text)
        }
    }

    func testStringsWithAndWithoutEscapesAreStrictUTF8() throws {
        XCTAssertEqual(try JSONParser().parse(Array("\"plain caf\u{e9}\"".utf8)), .string("plain caf\u{e9}"))
        XCTAssertEqual(try JSONParser().parse(Array(#""a\"b""#.utf8)), .string("a\"b"))
        for bytes: [UInt8] in [
            [0x22, 0xff, 0x22], [0x22, 0xc3, 0x22], [0x22, 0x61, 0x0a, 0x22], [0x22, 0x61, 0x5c, 0x22],
            [0x22, 0x61, 0x62], [0x22, 0xed, 0xa0, 0x80, 0x22],
        ] {
            XCTAssertThrowsError(try JSONParser().parse(bytes), "\(bytes)")
        }
        // All-ASCII runs (a JWT's whole text) take a path of their own: DEL and every
        // printable byte come back as they were; one byte above 0x7f anywhere in the run
        // sends it through the strict check again.
        let ascii = (0x20...0x7f).filter { $0 != 0x22 && $0 != 0x5c }.map(UInt8.init)
        XCTAssertEqual(try JSONParser().parse([0x22] + ascii + [0x22]), .string(String(decoding: ascii, as: UTF8.self)))
        XCTAssertEqual(
            try JSONParser().parse(Array(#"{"jwt":"eyJhbGciOiJSUzI1NiJ9.e30.c2ln"}"#.utf8))["jwt"],
            .string("eyJhbGciOiJSUzI1NiJ9.e30.c2ln"))
        XCTAssertThrowsError(try JSONParser().parse([0x22] + ascii + [0xc3, 0x28] + ascii + [0x22]))
        XCTAssertThrowsError(try JSONParser().parse([0x22, 0x61, 0x80, 0x22]))
        let text = "\"\u{7f}\\\n\u{1}\u{e9}\u{1f600}\""
        XCTAssertEqual(JSONEncoding.encode(.string(text)), #""\"\u007f\\\n\u0001é😀\"""#)
    }

    func testDepthAndSizeAreBounded() {
        XCTAssertThrowsError(try JSONParser(maxDepth: 4).parse("[[[[[1]]]]]"))
        XCTAssertThrowsError(try JSONParser(maxBytes: 8).parse("[1,2,3,4,5]"))
    }

    func testEncodingRoundTrips() throws {
        let v: JSONValue = .object([
            ("s", .string("q\"\\\u{01}é")), ("n", .integer(-42)), ("a", .array([.bool(false)])),
        ])
        XCTAssertEqual(try JSONParser().parse(JSONEncoding.encode(v)), v)
        XCTAssertEqual(JSONEncoding.encode(v), #"{"s":"q\"\\\u0001é","n":-42,"a":[false]}"#)
    }

    func testIntegersAreExact() throws {
        XCTAssertEqual(try JSONParser().parse("9007199254740993").int64Value, 9_007_199_254_740_993)
        XCTAssertNil(try JSONParser().parse("1.0").int64Value)
        XCTAssertNil(try JSONParser().parse("1e3").int64Value)
        XCTAssertNil(try JSONParser().parse("1E3").int64Value)
        XCTAssertNil(try JSONParser().parse("9223372036854775808").int64Value)
        XCTAssertEqual(try JSONParser().parse("-9223372036854775808").int64Value, Int64.min)
        XCTAssertEqual(try JSONParser().parse("-0").int64Value, 0)
        XCTAssertNil(try JSONParser().parse("\"12\"").int64Value)
    }
}

final class Base64URLTests: XCTestCase {
    func testRFC4648Vectors() {
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(plain), encoded)
            XCTAssertEqual(Base64URL.decode(encoded), Array(plain.utf8))
        }
        XCTAssertEqual(Base64URL.encode([0xfb, 0xff]), "-_8")
    }

    func testEveryLengthAndByteRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            XCTAssertEqual(Base64URL.decode(text), bytes, text)
            // Any one character changed to one outside the alphabet is refused.
            if !text.isEmpty {
                var broken = Array(text.utf8)
                broken[length % broken.count] = UInt8(ascii: "=")
                XCTAssertNil(Base64URL.decode(broken))
            }
        }
    }

    func testRefusesNonCanonicalText() {
        for text in ["Zg==", "Z", "Zh", "Zm9v!", "Zm 9v", "Zm+v"] { XCTAssertNil(Base64URL.decode(text), text) }
    }
}

final class CompactJWTTests: XCTestCase {
    func testNeedsExactlyThreeSegments() {
        XCTAssertThrowsError(try CompactJWT(parsing: "a.b")) { XCTAssertEqual($0 as? JWTFormatError, .segmentCount) }
        XCTAssertThrowsError(try CompactJWT(parsing: "a.b.c.d")) {
            XCTAssertEqual($0 as? JWTFormatError, .segmentCount)
        }
        XCTAssertThrowsError(try CompactJWT(parsing: String(repeating: "a", count: 9000))) {
            XCTAssertEqual($0 as? JWTFormatError, .tooLarge)
        }
    }

    func testSplitsAndDecodes() throws {
        let input = CompactJWT.signingInput(
            header: LoginClaims.header(kid: "k"), claims: .object([("sub", .string("a"))]))
        let token = CompactJWT.serialize(signingInput: input, signature: [1, 2])
        let jwt = try CompactJWT(parsing: token)
        XCTAssertEqual(jwt.header["alg"], .string("RS256"))
        XCTAssertEqual(jwt.claims["sub"], .string("a"))
        XCTAssertEqual(jwt.signature, [1, 2])
        XCTAssertEqual(jwt.signingInput, input)
    }

    func testJWKThumbprintInputIsRFC7638Form() {
        let jwk = JWK(n: [0, 1, 2], e: [1, 0, 1])
        XCTAssertEqual(String(decoding: jwk.thumbprintInput, as: UTF8.self), #"{"e":"AQAB","kty":"RSA","n":"AQI"}"#)
    }
}

final class HelperMessageTests: XCTestCase {
    func testRoundTrip() {
        let messages: [HelperMessage] = [
            .ready(reader: "Virtual device"), .retry(hint: "Center your finger"),
            .noMatch(triesLeft: 2), .match(finger: "right-index-finger"),
            .fail(.busy, detail: "in use"), .fail(.unreachable, detail: "refused"),
            .accepted(jti: "AQEBAQEBAQEBAQEBAQEBAQ", kid: "k-1"),
            .refused(jti: "j", kid: "k", code: .invalidToken, detail: "authenticator refused (401)"),
            .refused(jti: "j", kid: "k", code: .policyDenied, detail: ""),
            .unavailable(jti: "j", kid: "k", detail: "answered 500"),
        ]
        for m in messages { XCTAssertEqual(HelperMessage(line: m.line), m) }
    }

    func testRefusesAnythingElse() {
        for line in [
            "", "MATCH", "NOMATCH -1", "NOMATCH x", "FAIL nonsense x", "HELLO", "ACCEPTED", "ACCEPTED j",
            "ACCEPTED j k extra", "REFUSED j", "READY \u{7f}", String(repeating: "R", count: 300),
        ] {
            XCTAssertNil(HelperMessage(line: line), line)
        }
    }

    /// `REFUSED <jti> <kid> <code> <why>`: the code is one of `RefusalCode`, exactly; a line
    /// in the old shape (a text where the code stands) or with a code in another spelling
    /// is no verdict at all.
    func testARefusalCarriesAKnownCode() {
        XCTAssertEqual(
            HelperMessage(line: "REFUSED j k policy_denied authenticator refused (403: policy_denied, rule 4)"),
            .refused(
                jti: "j", kid: "k", code: .policyDenied, detail: "authenticator refused (403: policy_denied, rule 4)"))
        XCTAssertEqual(
            HelperMessage(line: "REFUSED j k revoked"), .refused(jti: "j", kid: "k", code: .revoked, detail: ""))
        for line in [
            "REFUSED j k", "REFUSED j k authenticator refused (401)", "REFUSED j k POLICY_DENIED why",
            "REFUSED j k policy-denied why", "REFUSED j k  policy_denied", "REFUSED  k policy_denied why",
            "REFUSED j k policy_denied\u{7f}",
        ] {
            XCTAssertNil(HelperMessage(line: line), line)
        }
        for code in RefusalCode.allCases {
            let message = HelperMessage.refused(jti: "j", kid: "k", code: code, detail: "why")
            XCTAssertEqual(message.line, "REFUSED j k \(code.rawValue) why")
            XCTAssertEqual(HelperMessage(line: message.line), message)
        }
    }
}

final class AuthenticatorVerdictTests: XCTestCase {
    private func verdict(_ status: Int, _ body: String) -> AuthenticatorVerdict {
        AuthenticatorVerdict.interpret(status: status, body: Array(body.utf8), user: "alice", jti: "j1", kid: "k1")
    }

    /// The code comes from the status and the `error` code, never from any other text.
    func testRefusalsCarryTheAuthenticatorsCode() {
        XCTAssertEqual(
            verdict(403, #"{"error":"policy_denied","rule":7}"#),
            .rejected(.policyDenied, "authenticator refused (403: policy_denied, rule 7)"))
        XCTAssertEqual(
            verdict(403, #"{"error":"hardware_key_required"}"#),
            .rejected(.hardwareKeyRequired, "authenticator refused (403: hardware_key_required)"))
        let codes: [(Int, String, RefusalCode)] = [
            (401, "key_revoked", .revoked), (401, "key_changed", .revoked), (401, "key_pending", .pending),
            (401, "unknown_kid", .unknownKey), (401, "replayed", .replayed), (401, "expired", .tokenTime),
            (401, "iat_in_future", .tokenTime), (401, "ttl_too_long", .tokenTime),
            (401, "invalid_token", .invalidToken),
            (401, "wrong_sub", .invalidToken), (400, "invalid_request", .invalidRequest),
            (400, "invalid_json", .invalidRequest),
            (403, "somebody_elses_code", .refused),
            // policy_denied counts only where fingerauthd says it: a 403.
            (401, "policy_denied", .invalidToken), (400, "policy_denied", .invalidRequest),
        ]
        for (status, error, code) in codes {
            guard case let .rejected(got, _) = verdict(status, #"{"error":"\#(error)"}"#) else { return XCTFail(error) }
            XCTAssertEqual(got, code, "\(status) \(error)")
        }
        guard case .rejected(.refused, _) = verdict(403, "not json") else { return XCTFail("403 without a body") }
        guard case .rejected(.invalidToken, _) = verdict(401, "") else { return XCTFail("401 without a body") }
    }

    /// An `error` code that only starts like a policy refusal, or carries the policy's
    /// words elsewhere, is no policy refusal: the code is compared whole.
    func testATextThatLooksLikeAPolicyRefusalIsNotOne() {
        for body in [
            #"{"error":"policy_denied_for_maintenance"}"#, #"{"error":"policy_denied, rule 1"}"#,
            #"{"error":"nope","error_description":"policy_denied"}"#,
        ] {
            guard case let .rejected(code, why) = verdict(403, body) else { return XCTFail(body) }
            XCTAssertEqual(code, .refused, body)
            XCTAssertTrue(why.hasPrefix("authenticator refused (403: "), why)
        }
    }

    func testAYesForAnotherLoginIsARefusal() {
        XCTAssertEqual(verdict(200, #"{"ok":true,"sub":"alice","jti":"j1","kid":"k1"}"#), .accepted)
        XCTAssertEqual(verdict(200, #"{"ok":false}"#), .rejected(.otherAnswer, "authenticator answered ok=false"))
        XCTAssertEqual(
            verdict(200, #"{"ok":true,"sub":"bob","jti":"j1","kid":"k1"}"#),
            .rejected(.otherAnswer, "authenticator accepted another user"))
        XCTAssertEqual(verdict(503, ""), .unavailable("authenticator answered 503"))
    }
}

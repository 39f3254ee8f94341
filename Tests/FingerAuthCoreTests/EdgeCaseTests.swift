import FingerAuthCore
import XCTest

/// The kernel's parsers at their edges: the error each refusal is, the limits exactly at
/// their value, and what a caller reads out of a value.
final class JSONEdgeTests: XCTestCase {
    func error(_ text: String, _ parser: JSONParser = JSONParser()) -> JSONError? {
        do {
            _ = try parser.parse(text)
            return nil
        } catch {
            return error
        }
    }

    func testEachRefusalIsItsKindOfError() {
        XCTAssertEqual(error("{\"a\":1,\"a\":2}"), .duplicateName("a"))
        XCTAssertEqual(error("[[1]]", JSONParser(maxDepth: 1)), .tooDeep)
        XCTAssertEqual(error("[1,2]", JSONParser(maxBytes: 4)), .tooLarge)
        XCTAssertEqual(error("x"), .invalid(offset: 0))
        XCTAssertEqual(error("[1]x"), .invalid(offset: 3))
        XCTAssertEqual(error("[1,]"), .invalid(offset: 3))
        XCTAssertEqual(error("{1:2}"), .invalid(offset: 1))
    }

    func testTheLimitsHoldExactlyAtTheirValue() throws {
        XCTAssertEqual(try JSONParser(maxBytes: 5).parse("[1,2]"), .array([.number("1"), .number("2")]))
        XCTAssertNoThrow(try JSONParser(maxDepth: 4).parse("[[[[1]]]]"))
        XCTAssertEqual(error("[[[[[1]]]]]", JSONParser(maxDepth: 4)), .tooDeep)
        XCTAssertNoThrow(try JSONParser(maxDepth: 2).parse("{\"a\":{\"b\":1}}"))
        XCTAssertEqual(error("{\"a\":{\"b\":[1]}}", JSONParser(maxDepth: 2)), .tooDeep)
    }

    func testWhitespaceOfJSONIsAllowedAroundEveryToken() throws {
        let value = try JSONParser().parse(" \t\r\n{ \"a\" :\n[ 1 ,\ttrue ] } \n")
        XCTAssertEqual(value, .object([("a", .array([.number("1"), .bool(true)]))]))
        XCTAssertNotNil(error("\u{0B}1"), "a vertical tab is not JSON whitespace")
    }

    func testEveryShortEscapeDecodes() throws {
        XCTAssertEqual(try JSONParser().parse(#""\/\b\f\r\t\"\\""#), .string("/\u{08}\u{0C}\r\t\"\\"))
        XCTAssertEqual(try JSONParser().parse(#""\u0000\u00E9\u00e9""#), .string("\u{0}éé"))
        XCTAssertNotNil(error(#""\x41""#))
        XCTAssertNotNil(error(#""\u00G0""#))
        XCTAssertNotNil(error(#""\u12""#))
    }

    func testSurrogatesMustComeAsAPair() throws {
        XCTAssertEqual(try JSONParser().parse(#""\uD83D\uDE00""#), .string("😀"))
        XCTAssertNotNil(error(#""\uDE00""#), "a low surrogate alone")
        XCTAssertNotNil(error(#""\uD83D\u0041""#), "a high surrogate followed by no low one")
        XCTAssertNotNil(error(#""\uD83Dx""#))
    }

    func testNumbersFollowTheGrammarAndKeepTheirText() throws {
        for text in ["0", "-0", "1e+5", "-0.0e-0", "12.50", "1E9"] {
            XCTAssertEqual(try JSONParser().parse(text), .number(text), text)
        }
        for text in ["-", "01", "1e", "1e+", ".5", "+1", "1.e3", "0x10", "Infinity", "NaN"] {
            XCTAssertNotNil(error(text), text)
        }
    }

    func testLiteralsAreExact() throws {
        XCTAssertEqual(try JSONParser().parse("[true,false,null]"), .array([.bool(true), .bool(false), .null]))
        for text in ["True", "nil", "tru", "nulll", "falsey"] { XCTAssertNotNil(error(text), text) }
    }

    func testReadingAValueOfAnotherKindGivesNil() throws {
        let value = try JSONParser().parse(#"{"n":5,"s":"5","b":true,"a":[1],"o":{}}"#)
        XCTAssertNil(value["n"]?.stringValue)
        XCTAssertNil(value["s"]?.int64Value)
        XCTAssertNil(value["b"]?.int64Value)
        XCTAssertEqual(value["b"]?.boolValue, true)
        XCTAssertNil(value["a"]?.objectValue)
        XCTAssertEqual(value["o"]?.objectValue?.count, 0)
        XCTAssertNil(value["missing"])
        XCTAssertNil(value["a"]?["0"], "an array has no members")
        XCTAssertNil(JSONValue.string("x")["x"])
    }

    func testObjectsKeepTheirMembersInOrder() throws {
        let value = try JSONParser().parse(#"{"z":1,"a":2,"m":3}"#)
        XCTAssertEqual(value.objectValue?.map(\.0), ["z", "a", "m"])
        XCTAssertEqual(JSONEncoding.encode(value), #"{"z":1,"a":2,"m":3}"#)
    }

    func testEncodingEscapesControlCharactersAndKeepsOtherText() {
        XCTAssertEqual(JSONEncoding.encode(.string("a\u{1F}b\u{08}")), #""a\u001fb\u0008""#)
        XCTAssertEqual(JSONEncoding.encode(.array([])), "[]")
        XCTAssertEqual(JSONEncoding.encode(.object([])), "{}")
        XCTAssertEqual(JSONEncoding.encodeBytes(.integer(Int64.min)), Array("-9223372036854775808".utf8))
    }
}

final class Base64URLEdgeTests: XCTestCase {
    func testTrailingBitsMustBeZero() {
        XCTAssertEqual(Base64URL.decode("AA"), [0])
        XCTAssertNil(Base64URL.decode("AB"))
        XCTAssertEqual(Base64URL.decode("AAE"), [0, 1])
        XCTAssertNil(Base64URL.decode("AAF"))
    }

    func testTheAlphabetIsTheURLSafeOne() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        XCTAssertEqual((0...255).map(UInt8.init).filter(Base64URL.isAlphabet), alphabet.sorted())
        XCTAssertEqual(Base64URL.encode([0xFF, 0xFF, 0xFF]), "____")
        XCTAssertEqual(Base64URL.encode([0xFB, 0xEF, 0xBE]), "----")
        XCTAssertNil(Base64URL.decode("+/+/"))
    }

    func testEmptyTextIsNoBytes() {
        XCTAssertEqual(Base64URL.decode(""), [])
        XCTAssertEqual(Base64URL.encode([UInt8]()), "")
    }
}

final class CompactJWTEdgeTests: XCTestCase {
    static let object = Base64URL.encode("{}")

    func error(_ token: String, maxBytes: Int = CompactJWT.maxBytes) -> JWTFormatError? {
        do {
            _ = try CompactJWT(parsing: token, maxBytes: maxBytes)
            return nil
        } catch {
            return error
        }
    }

    func testABadSegmentIsNamed() {
        XCTAssertEqual(error("e30=.e30.c2ln"), .encoding("header"))
        XCTAssertEqual(error("e30.e+0.c2ln"), .encoding("payload"))
        XCTAssertEqual(error("e30.e30.c2l/"), .encoding("signature"))
    }

    func testHeaderAndClaimsMustBeJSONObjects() {
        XCTAssertEqual(error(Base64URL.encode("[1]") + ".e30.c2ln"), .json("header"))
        XCTAssertEqual(error("e30." + Base64URL.encode("1") + ".c2ln"), .json("payload"))
        XCTAssertEqual(error("e30." + Base64URL.encode("{\"a\":1,\"a\":2}") + ".c2ln"), .json("payload"))
        XCTAssertEqual(error(".e30.c2ln"), .json("header"), "an empty segment is no JSON")
    }

    func testClaimsNestedDeeperThanEightAreRefused() {
        let deep = String(repeating: "[", count: 8) + String(repeating: "]", count: 8)
        XCTAssertEqual(error("e30." + Base64URL.encode("{\"a\":\(deep)}") + ".c2ln"), .json("payload"))
        let fits = String(repeating: "[", count: 7) + String(repeating: "]", count: 7)
        XCTAssertNil(error("e30." + Base64URL.encode("{\"a\":\(fits)}") + ".c2ln"))
    }

    func testAnEmptySignatureIsNoSignature() throws {
        XCTAssertEqual(try CompactJWT(parsing: "e30.e30.").signature, [])
    }

    func testTheSizeLimitIsTheCallersAndHoldsAtItsValue() {
        let token = "e30.e30.c2ln"
        XCTAssertNil(error(token, maxBytes: token.utf8.count))
        XCTAssertEqual(error(token, maxBytes: token.utf8.count - 1), .tooLarge)
    }

    func testTheSigningInputIsTheTextAsSentNotReencoded() throws {
        // The same claims with a space: another signing input, the one the signer signed.
        let header = Base64URL.encode("{\"alg\": \"RS256\"}")
        let jwt = try CompactJWT(parsing: header + ".e30.c2ln")
        XCTAssertEqual(jwt.signingInput, Array((header + ".e30").utf8))
        XCTAssertEqual(jwt.header["alg"]?.stringValue, "RS256")
        XCTAssertEqual(jwt.signature, Array("sig".utf8))
    }
}

final class HexAndConstantTimeTests: XCTestCase {
    func testHexIsTwoLowercaseDigitsPerByte() {
        XCTAssertEqual(Hex.lowercase([0x00, 0x0F, 0xA0, 0xFF]), "000fa0ff")
        XCTAssertEqual(Hex.lowercase([]), "")
    }

    func testConstantTimeEqualityNeedsEqualLengthAndBytes() {
        XCTAssertTrue(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(ConstantTime.equal([1, 2], [1, 2, 0]))
        XCTAssertTrue(ConstantTime.equal("", ""))
        XCTAssertFalse(ConstantTime.equal("é", "e\u{301}"), "bytes, not canonical equivalence")
    }
}

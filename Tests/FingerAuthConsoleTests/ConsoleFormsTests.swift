import FingerAuthConsole
import XCTest

/// The console's strict little parsers: form bodies, percent-decoding and the cookie header.
final class ConsoleFormsTests: XCTestCase {
    func testAFormBodyGivesItsDecodedFields() {
        let fields = ConsoleForms.fields(Array("name=alice&password=p%40ss+word&csrf=abc".utf8))
        XCTAssertEqual(fields, ["name": "alice", "password": "p@ss word", "csrf": "abc"])
    }

    func testARepeatedNameKeepsItsFirstValue() {
        XCTAssertEqual(ConsoleForms.fields(Array("csrf=first&csrf=second".utf8)), ["csrf": "first"])
    }

    func testAFieldWithoutAValueIsEmptyAndAMalformedValueIsEmptyToo() {
        let fields = ConsoleForms.fields(Array("confirm&bad=%G1&ok=1".utf8))
        XCTAssertEqual(fields, ["confirm": "", "bad": "", "ok": "1"])
    }

    func testAtMostThirtyTwoFieldsAreRead() {
        let body = (0..<40).map { "f\($0)=v" }.joined(separator: "&")
        let fields = ConsoleForms.fields(Array(body.utf8))
        XCTAssertEqual(fields.count, 32)
        XCTAssertEqual(fields["f31"], "v")
        XCTAssertNil(fields["f32"])
    }

    func testPercentDecodingRefusesBrokenEscapesAndInvalidUTF8() {
        XCTAssertEqual(ConsoleForms.decode("a%20b+c"), "a b c")
        XCTAssertEqual(ConsoleForms.decode("%C3%A9"), "é")
        XCTAssertNil(ConsoleForms.decode("%"))
        XCTAssertNil(ConsoleForms.decode("%4"))
        XCTAssertNil(ConsoleForms.decode("%ZZ"))
        XCTAssertNil(ConsoleForms.decode("%FF"), "not UTF-8")
    }

    func testTheCookieHeaderIsSplitByName() {
        let header = "theme=dark; fa_session=abc=def; other=1"
        XCTAssertEqual(ConsoleForms.cookie(header, "fa_session"), "abc=def")
        XCTAssertEqual(ConsoleForms.cookie(header, "theme"), "dark")
        XCTAssertNil(ConsoleForms.cookie(header, "fa"))
        XCTAssertNil(ConsoleForms.cookie(nil, "fa_session"))
        XCTAssertNil(ConsoleForms.cookie("fa_session", "fa_session"), "a name without a value")
    }
}

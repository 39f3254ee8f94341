import FingerAuthCore
import XCTest

/// The kernel's byte-wise text helpers, which the module's Embedded build uses in place of
/// the standard library's string processing and Unicode case tables.
final class ByteSearchTests: XCTestCase {
    func testContainsBytesFindsPathPartsAnywhere() {
        XCTAssertTrue("/dev/pts/../tty".containsBytes("/../"))
        XCTAssertTrue("//".containsBytes("//"))
        XCTAssertFalse("/dev/pts/3".containsBytes("//"))
        XCTAssertFalse("ab".containsBytes("abc"))
        XCTAssertTrue("anything".containsBytes(""))
    }

    func testReplacingAllFillsEveryPlaceholder() {
        XCTAssertEqual("{service}: {left} left, {left}!".replacingAll("{left}", with: "2"), "{service}: 2 left, 2!")
        XCTAssertEqual("Touch for {service}".replacingAll("{service}", with: "sudo"), "Touch for sudo")
        XCTAssertEqual("no placeholder".replacingAll("{x}", with: "y"), "no placeholder")
        XCTAssertEqual("same".replacingAll("", with: "y"), "same")
        XCTAssertEqual("{a}{a}".replacingAll("{a}", with: "{a}"), "{a}{a}", "a replacement is not searched again")
        XCTAssertEqual("Drücken für {service}".replacingAll("{service}", with: "sudo"), "Drücken für sudo")
    }

    func testASCIILowercasingLeavesOtherBytesAlone() {
        XCTAssertEqual("Auth.Example.ORG".asciiLowercased(), "auth.example.org")
        XCTAssertEqual("[2001:DB8::1]".asciiLowercased(), "[2001:db8::1]")
        XCTAssertEqual("ÉCOLE.example".asciiLowercased(), "École.example", "É is not ASCII: it stays")
        XCTAssertEqual("@[`{".asciiLowercased(), "@[`{", "the neighbours of A-Z stay")
    }
}

import FingerAuthCore
import XCTest

/// Any text as one line of the module's protocol, and back.
final class LineEscapeTests: XCTestCase {
    func testControlBytesAndPercentAreEscapedAndComeBack() {
        let text = "Place your finger\nFORGED LINE\r\t100% caf\u{E9} \u{7F}"
        let line = LineEscape.encode(text)
        XCTAssertEqual(line, "Place your finger%0AFORGED LINE%0D%09100%25 caf\u{E9} %7F")
        XCTAssertFalse(line.utf8.contains(0x0A))
        XCTAssertEqual(LineEscape.decode(line), text)
    }

    func testPlainTextStaysAsItIs() {
        XCTAssertEqual(LineEscape.encode("pts/3"), "pts/3")
        XCTAssertEqual(LineEscape.decode("pts/3"), "pts/3")
        XCTAssertEqual(LineEscape.decode(""), "")
    }

    func testWhatEncodeCannotHaveWrittenIsRefused() {
        for line in ["%", "%4", "%4g", "%0a", "a\tb", "a\u{7F}b", "100%"] {
            XCTAssertNil(LineEscape.decode(line), line)
        }
    }
}

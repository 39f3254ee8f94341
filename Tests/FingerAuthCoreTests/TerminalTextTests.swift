import FingerAuthCore
import XCTest

/// Untrusted text on an admin's terminal: every control character shown, nothing else touched.
final class TerminalTextTests: XCTestCase {
    func testEscapeSequencesAndForgedLinesAreShownNotSent() {
        XCTAssertEqual(
            TerminalText.escaped("sudo\u{1B}]0;owned\u{07}\u{1B}[2J\nFAKE\r\u{7F}\u{9B}1m"),
            "sudo\\x1b]0;owned\\x07\\x1b[2J\\x0aFAKE\\x0d\\x7f\\x9b1m")
        XCTAssertEqual(TerminalText.escaped("a\tb\nc\u{1B}", keepingLineBreaks: true), "a\tb\nc\\x1b")
        XCTAssertEqual(TerminalText.escaped("grant é, record 1"), "grant é, record 1")
    }
}

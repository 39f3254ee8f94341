import FingerAuthCore
import XCTest

final class ServiceNameTests: XCTestCase {
    func testNamesOfPrintableASCIIWithoutSpacesAreAccepted() {
        for name in [
            "sudo", "su", "login", "sshd", "i3lock", "gdm-password", "polkit-1", "fa_only", "x", "a.b", "*",
            "~!@#$%^&()",
            String(repeating: "s", count: 64),
        ] {
            XCTAssertTrue(ServiceName.isValid(name), name)
            XCTAssertTrue(ServiceName.isValid(Substring(name)), name)
            XCTAssertEqual(ServiceName.claim(name), name, "a valid name is its own claim")
        }
    }

    func testEmptySpacesControlsNonASCIIAndLongNamesAreRefused() {
        for name in [
            "", " ", "su do", "sudo ", "\tsudo", "sudo\n", "su\u{7f}do", "su\u{0}do", "caf\u{e9}", "\u{212A}",
            "sudo\u{200B}", "\u{1F600}", String(repeating: "s", count: 65),
        ] {
            XCTAssertFalse(ServiceName.isValid(name), name)
            XCTAssertFalse(ServiceName.isValid(Substring(name)), name)
        }
        // 64 bytes, not 64 characters: 32 two-byte letters are 64 bytes and still refused
        // (they are not ASCII); 63 ASCII bytes and one two-byte letter are 65.
        XCTAssertFalse(ServiceName.isValid(String(repeating: "\u{e9}", count: 32)))
        XCTAssertFalse(ServiceName.isValid(String(repeating: "s", count: 63) + "\u{e9}"))
    }

    func testTheModulesMappingMakesEveryNameValid() {
        let cases: [(String, String)] = [
            ("", "unknown"),
            ("su do", "su_do"),
            ("sudo\n", "sudo_"),
            ("\r\n", "__"),
            ("caf\u{e9}", "caf_"),
            ("cafe\u{301}", "cafe_"), // a combining accent is its own scalar
            ("\u{1F600}x", "_x"), // four bytes, one scalar, one `_`
            ("a\u{7f}b\u{0}c", "a_b_c"),
            (String(repeating: "s", count: 70), String(repeating: "s", count: 64)),
            (String(repeating: "\u{e9}", count: 70), String(repeating: "_", count: 64)),
        ]
        for (raw, mapped) in cases {
            XCTAssertEqual(ServiceName.claim(raw), mapped, raw)
            XCTAssertTrue(ServiceName.isValid(ServiceName.claim(raw)), raw)
        }
        XCTAssertEqual(ServiceName.claim(String(repeating: "s", count: 65)).utf8.count, ServiceName.maxLength)
    }

    func testTheRuleSaysWhatItChecks() {
        XCTAssertEqual(ServiceName.maxLength, 64)
        XCTAssertTrue(ServiceName.rule.contains("64"), ServiceName.rule)
    }
}

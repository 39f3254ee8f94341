import FingerAuthLoginDomain
import FingerAuthLoginSystem
import XCTest

/// The texts in the caller's language: only a plain locale name is used, and a missing
/// catalog gives the English text.
final class GettextTranslatorTests: XCTestCase {
    func testPlainLocaleNames() {
        for name in ["de_DE.UTF-8", "fr_FR", "es", "sr_RS@latin", "en_US.utf8"] {
            XCTAssertTrue(LocaleName.isPlain(name), name)
            XCTAssertNotNil(GettextTranslator(locale: name, directory: "/nonexistent"), name)
        }
        for name in ["", "../../tmp/x", "de/DE", ".hidden", "de DE", "de_DE;rm", String(repeating: "a", count: 65)] {
            XCTAssertFalse(LocaleName.isPlain(name), name)
            XCTAssertNil(GettextTranslator(locale: name, directory: "/nonexistent"), name)
        }
    }

    func testCAndPOSIXAreEnglish() {
        for name in ["C", "POSIX", "C.UTF-8", "POSIX.UTF-8"] {
            XCTAssertNil(GettextTranslator(locale: name, directory: "/nonexistent"), name)
        }
    }

    func testAMissingCatalogGivesTheEnglishText() {
        let translator = GettextTranslator(locale: "de_DE.UTF-8", directory: "/nonexistent")
        XCTAssertEqual(translator?.translate(LoginTexts.placeFinger), LoginTexts.placeFinger)
    }
}

import CPAM
import FingerAuthLoginDomain
import PAMFingerAuth
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The module's own code in the normal mode (the shipped .so is the same files in Embedded
/// Swift): its arguments, its entry points' refusals, the caller's language.
final class ModuleEntryTests: XCTestCase {
    /// argv as libpam hands it over, built from `words` (nil entries stay nil).
    private func withArgv<T>(_ words: [String?], _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>) -> T)
        -> T
    {
        let copies = words.map { $0.map { strdup($0) } ?? nil }
        defer { for copy in copies { free(copy) } }
        var pointers = copies.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return body(0, UnsafeMutablePointer.allocate(capacity: 1)) }
            return body(Int32(words.count), base)
        }
    }

    func testArgumentsArePassedAsTheyCame() {
        let words = withArgv(["url=https://auth.example:8443", "debug", "text.place_finger=Touch it"]) {
            moduleArguments($0, $1)
        }
        XCTAssertEqual(words, ["url=https://auth.example:8443", "debug", "text.place_finger=Touch it"])
    }

    func testNoArgumentsAreNoWords() {
        XCTAssertEqual(moduleArguments(0, nil), [])
        XCTAssertEqual(withArgv([]) { moduleArguments($0, $1) }, [])
    }

    func testANullEntryIsSkippedNotTheRest() {
        XCTAssertEqual(
            withArgv(["debug", nil, "prompt=parallel"]) { moduleArguments($0, $1) }, ["debug", "prompt=parallel"])
    }

    /// Dropping one argument silently could drop, say, `pinned_pubkey=`: too many is no login.
    func testMoreThanSixtyFourArgumentsAreRefusedWhole() {
        let sixtyFour = Array(repeating: "debug" as String?, count: maxArguments)
        XCTAssertEqual(withArgv(sixtyFour) { moduleArguments($0, $1) }?.count, 64)
        XCTAssertNil(withArgv(sixtyFour + ["debug"]) { moduleArguments($0, $1) })
    }

    func testAnArgumentOverFourKiBIsRefusedWhole() {
        let longest = "text.place_finger=" + String(repeating: "x", count: maxArgumentBytes - 18)
        XCTAssertEqual(withArgv([longest]) { moduleArguments($0, $1) }, [longest])
        XCTAssertNil(withArgv(["debug", longest + "x"]) { moduleArguments($0, $1) })
    }

    func testAnArgumentThatIsNotUTF8IsReadAsBytesNotDropped() {
        let words = withArgv(["text.refused=caf\u{E9}"]) { moduleArguments($0, $1) }
        XCTAssertEqual(words, ["text.refused=café"])
    }

    func testWithoutAHandleAuthenticateIsASystemErrorAndSetcredGrantsNothingOfItsOwn() {
        XCTAssertEqual(pam_sm_authenticate(nil, 0, 0, nil), PAM_SYSTEM_ERR)
        XCTAssertEqual(pam_sm_setcred(nil, 0, 0, nil), PAM_SUCCESS)
    }
}

/// The caller's language: the first of LC_ALL, LC_MESSAGES and LANG that is set, and only a
/// plain locale name; the worst a caller can choose is another installed language.
final class CallerLanguageTests: XCTestCase {
    private let names = ["LC_ALL", "LC_MESSAGES", "LANG"]
    private var saved: [String: String] = [:]

    override func setUp() {
        for name in names {
            if let value = getenv(name) { saved[name] = String(cString: value) }
            unsetenv(name)
        }
    }

    override func tearDown() {
        for name in names {
            if let value = saved[name] { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }

    func testPlainLocaleNames() {
        for name in ["de_DE.UTF-8", "fr_FR", "es", "sr_RS@latin", "en_US.utf8"] {
            XCTAssertTrue(GettextTranslator.isPlainLocaleName(name), name)
        }
        for name in ["", "../../tmp/x", "de/DE", ".hidden", "de DE", "de_DE;rm", String(repeating: "a", count: 65)] {
            XCTAssertFalse(GettextTranslator.isPlainLocaleName(name), name)
        }
    }

    func testLCALLComesBeforeLCMESSAGESBeforeLANG() {
        setenv("LANG", "es_ES.UTF-8", 1)
        XCTAssertEqual(GettextTranslator(directory: "/nonexistent")?.locale, "es_ES.UTF-8")
        setenv("LC_MESSAGES", "fr_FR.UTF-8", 1)
        XCTAssertEqual(GettextTranslator(directory: "/nonexistent")?.locale, "fr_FR.UTF-8")
        setenv("LC_ALL", "de_DE.UTF-8", 1)
        XCTAssertEqual(GettextTranslator(directory: "/nonexistent")?.locale, "de_DE.UTF-8")
    }

    func testNoLanguageCAndPathsAreEnglish() {
        XCTAssertNil(GettextTranslator(directory: "/nonexistent"))
        for value in ["C", "POSIX", "C.UTF-8", "../../../tmp/evil", "de/../../x"] {
            setenv("LC_ALL", value, 1)
            XCTAssertNil(GettextTranslator(directory: "/nonexistent"), value)
        }
    }

    func testAMissingCatalogGivesTheEnglishText() {
        setenv("LANG", "de_DE.UTF-8", 1)
        let translator = GettextTranslator(directory: "/nonexistent")
        XCTAssertEqual(translator?.translate(LoginTexts.placeFinger), LoginTexts.placeFinger)
    }
}

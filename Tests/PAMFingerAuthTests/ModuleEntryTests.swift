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

/// The caller's language, as the module reads it for fingerauth-pam: the first of LC_ALL,
/// LC_MESSAGES and LANG that is set, and only a plain locale name.
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

    func testLCALLComesBeforeLCMESSAGESBeforeLANG() {
        setenv("LANG", "es_ES.UTF-8", 1)
        XCTAssertEqual(CallerLocale.fromEnvironment(), "es_ES.UTF-8")
        setenv("LC_MESSAGES", "fr_FR.UTF-8", 1)
        XCTAssertEqual(CallerLocale.fromEnvironment(), "fr_FR.UTF-8")
        setenv("LC_ALL", "de_DE.UTF-8", 1)
        XCTAssertEqual(CallerLocale.fromEnvironment(), "de_DE.UTF-8")
    }

    func testNoLanguageCAndPathsAreEnglish() {
        XCTAssertNil(CallerLocale.fromEnvironment())
        for value in ["C", "POSIX", "C.UTF-8", "../../../tmp/evil", "de/../../x"] {
            setenv("LC_ALL", value, 1)
            XCTAssertNil(CallerLocale.fromEnvironment(), value)
        }
        // The first one set decides, even when it is not usable: LANG is not consulted then.
        setenv("LC_ALL", "../x", 1)
        setenv("LANG", "de_DE.UTF-8", 1)
        XCTAssertNil(CallerLocale.fromEnvironment())
    }
}

/// Where the module finds fingerauth-pam: `pam_helper`, from the pam.d line first, then
/// the configuration file (read by bytes), then the default.
final class ModuleLocationTests: XCTestCase {
    func testThePamDLineWinsAndNeedsNoFile() {
        let found = ModuleLocation.find(["conf=/nonexistent/fingerauth.conf", "pam_helper=/opt/fa/fingerauth-pam"])
        XCTAssertEqual(try? found.get(), "/opt/fa/fingerauth-pam")
    }

    func testARelativeConfIsTheSameErrorAsInTheOptions() {
        guard case let .failure(error) = ModuleLocation.find(["conf=etc/fingerauth.conf"]) else {
            return XCTFail("a relative conf= was accepted")
        }
        XCTAssertEqual("\(error)", "pam.d argument: conf: must be an absolute path")
    }

    func testANamedFileThatIsMissingIsAnError() {
        guard case let .failure(error) = ModuleLocation.find(["conf=/nonexistent/fingerauth.conf"]) else {
            return XCTFail("a missing named file was accepted")
        }
        XCTAssertEqual("\(error)", "/nonexistent/fingerauth.conf: conf: file does not exist")
    }

    func testTheFilesLastLineForTheKeyCounts() {
        let text = """
            # pam_helper = /commented/out
            url = https://auth.example:8443
              pam_helper =\t/first/fingerauth-pam\r
            pam_helper_other = /not/this
            login_helper = /not/this/either
            pam_helper = /second/fingerauth-pam
            """
        XCTAssertEqual(ModuleLocation.lastValue(of: "pam_helper", in: text), "/second/fingerauth-pam")
        XCTAssertNil(ModuleLocation.lastValue(of: "pam_helper", in: "url = x\n# pam_helper = /y\n"))
    }

    func testWithoutTheKeyTheDefaultAndTheFilesLineOtherwise() throws {
        let path = "/tmp/fingerauth-module-location-\(getpid()).conf"
        defer { unlink(path) }
        func save(_ text: String) {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = text.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        save("url = https://auth.example:8443\n")
        XCTAssertEqual(try ModuleLocation.find(["conf=" + path]).get(), "/usr/libexec/fingerauth/fingerauth-pam")
        save("pam_helper = /opt/fa/fingerauth-pam\n")
        XCTAssertEqual(try ModuleLocation.find(["conf=" + path]).get(), "/opt/fa/fingerauth-pam")
        // An unsafe file is the same error as in the options: no path from it is believed.
        chmod(path, 0o666)
        guard case let .failure(error) = ModuleLocation.find(["conf=" + path]) else {
            return XCTFail("a world-writable file was read")
        }
        XCTAssertTrue("\(error)".hasPrefix(path + ": "), "\(error)")
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The module's presence check follows `reader`: FingerAuth's prints and the key for
/// libfprint, the key alone for fprintd (fprintd holds the prints; the helper asks it), and
/// for auto the key with either prints or fprintd installed.
final class EnrollmentPresenceTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-presence-" }

    func layout(prints: Bool) -> Options {
        mkdir(root + "/users", 0o700)
        mkdir(root + "/users/alice", 0o700)
        mkdir(root + "/users/alice/prints", 0o700)
        write("users/alice/device.key", "key", mode: 0o600)
        if prints { write("users/alice/prints/right-index-finger.fpt", "FP3", mode: 0o600) }
        var options = Options()
        options.stateDirectory = root
        return options
    }

    func state(_ options: Options, _ reader: ReaderChoice, fprintd: Bool) -> EnrollmentState {
        var chosen = options
        chosen.reader = reader
        return FileEnrollmentStore(fprintdInstalled: { fprintd }).enrollment(of: "alice", options: chosen)
    }

    func testAKeyWithoutPrintsIsEnrolledOnlyWhereFprintdHoldsThePrints() {
        let options = layout(prints: false)
        XCTAssertEqual(state(options, .libfprint, fprintd: true), .notEnrolled)
        XCTAssertEqual(state(options, .fprintd, fprintd: false), .enrolled)
        XCTAssertEqual(state(options, .auto, fprintd: true), .enrolled)
        XCTAssertEqual(state(options, .auto, fprintd: false), .notEnrolled)
    }

    func testPrintsAndAKeyAreEnrolledForEveryReader() {
        let options = layout(prints: true)
        for reader in ReaderChoice.allCases {
            XCTAssertEqual(state(options, reader, fprintd: false), .enrolled, reader.rawValue)
        }
    }

    func testNoKeyIsNotEnrolledEvenForFprintd() {
        let options = layout(prints: true)
        unlink(root + "/users/alice/device.key")
        for reader in ReaderChoice.allCases {
            XCTAssertEqual(state(options, reader, fprintd: true), .notEnrolled, reader.rawValue)
        }
    }
}

import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The ACPI lid files as the kernel lays them out (`<dir>/LID0/state`), in a temporary folder.
final class LidSensorTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-lid-" }

    func lid(_ name: String, _ state: String) {
        XCTAssertEqual(mkdir(root + "/" + name, 0o755), 0)
        write(name + "/state", state)
    }

    func testAnOpenLidIsReadFromItsStateFile() {
        lid("LID0", "state:      open\n")
        let read = LidSensor.readACPI(directory: root)
        XCTAssertEqual(read.state, .open)
        XCTAssertEqual(read.source, root + "/LID0/state")
    }

    func testAClosedLidIsReadFromItsStateFile() {
        lid("LID0", "state:      closed\n")
        XCTAssertEqual(LidSensor.readACPI(directory: root).state, .closed)
    }

    func testNoLidFolderIsUnknownAndNamesTheDirectory() {
        let read = LidSensor.readACPI(directory: root + "/none")
        XCTAssertEqual(read.state, .unknown)
        XCTAssertEqual(read.source, root + "/none")
    }

    func testAStateFileThatSaysNothingKnownIsUnknown() {
        lid("LID0", "state: maybe\n")
        let read = LidSensor.readACPI(directory: root)
        XCTAssertEqual(read.state, .unknown)
        XCTAssertEqual(read.source, root, "an unknown file is not named as the source")
    }

    func testTwoLidsAreCombinedAsTheDomainSays() {
        lid("LID0", "state:      open\n")
        lid("LID1", "state:      closed\n")
        XCTAssertEqual(
            LidSensor.readACPI(directory: root).state, LidState.combine([.open, .closed]),
            "the rule is the login domain's")
    }

    func testHiddenEntriesAndFoldersWithoutAStateAreSkipped() {
        lid(".LID9", "state:      closed\n")
        XCTAssertEqual(mkdir(root + "/LID1", 0o755), 0)
        lid("LID2", "state:      open\n")
        let read = LidSensor.readACPI(directory: root)
        XCTAssertEqual(read.state, .open)
        XCTAssertEqual(read.source, root + "/LID2/state")
    }

    func testAStateFileThatIsALinkIsNotFollowed() {
        write("elsewhere", "state:      closed\n")
        XCTAssertEqual(mkdir(root + "/LID0", 0o755), 0)
        XCTAssertEqual(symlink(root + "/elsewhere", root + "/LID0/state"), 0)
        XCTAssertEqual(LidSensor.readACPI(directory: root).state, .unknown)
    }

    func testWithoutABusTheACPIFilesDecide() {
        lid("LID0", "state:      closed\n")
        let read = LidSensor.read(bus: nil, acpiDirectory: root, deadline: .after(seconds: 1))
        XCTAssertEqual(read.state, .closed)
        XCTAssertEqual(read.source, root + "/LID0/state")
    }
}

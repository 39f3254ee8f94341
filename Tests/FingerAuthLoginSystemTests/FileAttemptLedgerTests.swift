import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The attempts ledger over a real folder: the record a login reads and writes, the file it
/// leaves (root 0600, one fixed-width line), and every entry it does not believe replaced by
/// a record at the limit with the reason for the log.
final class FileAttemptLedgerTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-attempts-" }

    var directory: String { root + "/attempts" }
    var ledger: FileAttemptLedger { FileAttemptLedger(directory: directory) }

    func entry(_ user: String = "alice", _ change: (inout AttemptRecord) -> Void = { _ in }) -> AttemptEntry? {
        switch ledger.update(user, change) {
        case let .success(found): return found
        case let .failure(why):
            XCTFail("\(why)")
            return nil
        }
    }

    func error(_ user: String = "alice", in ledger: FileAttemptLedger? = nil) -> String? {
        guard case let .failure(why) = (ledger ?? self.ledger).update(user, { _ in }) else { return nil }
        return why.description
    }

    func stat(_ path: String) -> stat {
        var st = Glibc.stat()
        XCTAssertEqual(lstat(path, &st), 0, path)
        return st
    }

    func content(_ user: String = "alice") -> String? {
        guard let fd = Optional(open(directory + "/" + user, O_RDONLY)), fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(fd, &buffer, buffer.count)
        return n < 0 ? nil : String(decoding: buffer[0..<n], as: UTF8.self)
    }

    func prepareDirectory() {
        XCTAssertEqual(mkdir(directory, 0o700), 0)
    }

    // MARK: - the record

    func testAFirstLoginMakesAnEmptyRecordRootSixHundredInAFolderRootSevenHundred() throws {
        let made = try XCTUnwrap(entry())
        XCTAssertEqual(made, AttemptEntry(record: AttemptRecord(), replaced: nil))
        let file = stat(directory + "/alice")
        XCTAssertEqual(file.st_mode & 0o7777, 0o600)
        XCTAssertEqual(file.st_uid, 0)
        XCTAssertEqual(Int(file.st_size), AttemptRecord.lineBytes)
        XCTAssertEqual(content(), AttemptRecord().line)
        let folder = stat(directory)
        XCTAssertEqual(folder.st_mode & 0o7777, 0o700)
        XCTAssertEqual(folder.st_uid, 0)
    }

    func testAFailureIsKeptAndReadBackByTheNextLogin() throws {
        let now = ledger.nowMilliseconds()
        let first = try XCTUnwrap(entry { $0 = AttemptLimit.addingFailure($0, now: now) })
        XCTAssertEqual(first.record, AttemptRecord(failures: 1, lastFailure: now))
        let second = try XCTUnwrap(entry { $0 = AttemptLimit.addingFailure($0, now: now + 10) })
        XCTAssertEqual(second.record.failures, 2)
        XCTAssertEqual(content(), AttemptRecord(failures: 2, lastFailure: now + 10).line)
        XCTAssertEqual(try XCTUnwrap(entry()).record, AttemptRecord(failures: 2, lastFailure: now + 10))
    }

    func testASuccessClearsTheRecordInPlaceInItsFixedWidth() throws {
        _ = entry { $0 = AttemptRecord(failures: 7, lastFailure: 123_456_789) }
        let before = stat(directory + "/alice").st_ino
        _ = entry { $0 = AttemptRecord() }
        XCTAssertEqual(content(), AttemptRecord().line)
        XCTAssertEqual(stat(directory + "/alice").st_ino, before, "rewritten in place, not replaced")
        XCTAssertEqual(Int(stat(directory + "/alice").st_size), AttemptRecord.lineBytes)
    }

    func testEachUserHasARecordOfTheirOwn() throws {
        _ = entry("alice") { $0 = AttemptRecord(failures: 3, lastFailure: 5) }
        XCTAssertEqual(try XCTUnwrap(entry("bob")).record, AttemptRecord())
        XCTAssertEqual(SafeFileNames.list(directory), ["alice", "bob"])
    }

    func testTheClockIsTheTimeSinceBootAndNeverGoesBack() {
        let first = ledger.nowMilliseconds()
        let second = ledger.nowMilliseconds()
        XCTAssertGreaterThan(first, 0)
        XCTAssertGreaterThanOrEqual(second, first)
    }

    // MARK: - refusals

    func testANameThatIsNoUserNameGetsNoRecord() {
        XCTAssertEqual(error("../etc/passwd"), "not a user name for a record")
        XCTAssertEqual(error(""), "not a user name for a record")
        XCTAssertFalse(SafeFileNames.exists(directory), "nothing is made for a refused name")
    }

    func testARelativeOrDottedFolderIsRefused() {
        XCTAssertEqual(error(in: FileAttemptLedger(directory: "run/attempts")), "run/attempts: not an absolute path")
        XCTAssertEqual(
            error(in: FileAttemptLedger(directory: root + "/../attempts")), root + "/../attempts: not a plain path")
    }

    func testAFolderOpenToOthersIsRefusedWithItsMode() {
        prepareDirectory()
        XCTAssertEqual(chmod(directory, 0o755), 0)
        XCTAssertEqual(error(), directory + ": mode 755, must be 0700")
    }

    func testAFolderOfAnotherOwnerIsRefused() {
        prepareDirectory()
        XCTAssertEqual(chown(directory, 1000, 1000), 0)
        XCTAssertEqual(error(), directory + ": not owned by root")
    }

    func testAParentWritableByOthersWithoutTheStickyBitIsRefused() {
        XCTAssertEqual(chmod(root, 0o777), 0)
        XCTAssertEqual(error(), root + ": directory writable by group or others")
        XCTAssertEqual(chmod(root, 0o1777), 0)
        XCTAssertNil(error(), "a sticky folder, as /tmp, may be on the way")
    }

    func testAFolderThatIsALinkIsRefused() {
        XCTAssertEqual(mkdir(root + "/elsewhere", 0o700), 0)
        XCTAssertEqual(symlink(root + "/elsewhere", directory), 0)
        XCTAssertEqual(error(), directory + ": not a directory (or a symbolic link)")
    }

    // MARK: - entries not believed

    func assertReplaced(because reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let now = ledger.nowMilliseconds()
        let found = try XCTUnwrap(entry(), file: file, line: line)
        XCTAssertEqual(found.replaced, reason, file: file, line: line)
        XCTAssertEqual(found.record.failures, AttemptLimit.failuresInARow, "at the limit", file: file, line: line)
        XCTAssertGreaterThanOrEqual(found.record.lastFailure, now, file: file, line: line)
        let made = stat(directory + "/alice")
        XCTAssertEqual(made.st_mode & 0o7777, 0o600, file: file, line: line)
        XCTAssertEqual(made.st_mode & S_IFMT, S_IFREG, file: file, line: line)
        XCTAssertEqual(made.st_nlink, 1, file: file, line: line)
        XCTAssertEqual(content(), found.record.line, file: file, line: line)
    }

    func testARecordReadableByOthersIsReplacedAtTheLimit() throws {
        prepareDirectory()
        write("attempts/alice", AttemptRecord().line, mode: 0o644)
        try assertReplaced(because: "mode 644")
    }

    func testARecordOfAnotherOwnerIsReplacedAtTheLimit() throws {
        prepareDirectory()
        write("attempts/alice", AttemptRecord().line, mode: 0o600)
        XCTAssertEqual(chown(directory + "/alice", 1000, 1000), 0)
        try assertReplaced(because: "owned by uid 1000")
    }

    func testACorruptRecordIsReplacedAtTheLimit() throws {
        prepareDirectory()
        write("attempts/alice", "fingerauth-attempts 1 0000 junk\n", mode: 0o600)
        try assertReplaced(because: "content not a record")
    }

    func testAnEmptyRecordFileIsNotAnEmptyCount() throws {
        prepareDirectory()
        write("attempts/alice", "", mode: 0o600)
        try assertReplaced(because: "content not a record")
    }

    func testALinkInPlaceOfTheRecordIsRemovedAndItsTargetLeftAlone() throws {
        prepareDirectory()
        write("victim", "do not touch\n", mode: 0o600)
        XCTAssertEqual(symlink(root + "/victim", directory + "/alice"), 0)
        try assertReplaced(because: "a symbolic link")
        XCTAssertEqual(try SafeFileNames.text(root + "/victim"), "do not touch\n")
    }

    func testAHardLinkedRecordIsReplacedAndTheOtherNameKept() throws {
        prepareDirectory()
        write("attempts/alice", AttemptRecord().line, mode: 0o600)
        XCTAssertEqual(link(directory + "/alice", root + "/other-name"), 0)
        try assertReplaced(because: "2 links")
        XCTAssertEqual(try SafeFileNames.text(root + "/other-name"), AttemptRecord().line)
    }

    func testAFolderInPlaceOfTheRecordIsRemovedAndReplaced() throws {
        prepareDirectory()
        XCTAssertEqual(mkdir(directory + "/alice", 0o700), 0)
        try assertReplaced(because: "a directory")
    }

    func testADraftLeftByAHostThatEndedIsRemovedWhenARecordIsMade() throws {
        prepareDirectory()
        // A pid above the kernel's pid_max: no process has it.
        write("attempts/bob#new.2147483000", "", mode: 0o600)
        write("attempts/carol#new.1", "", mode: 0o600) // pid 1 lives: its draft stays
        _ = try XCTUnwrap(entry())
        XCTAssertEqual(SafeFileNames.list(directory), ["alice", "carol#new.1"])
    }

    func testALockHeldByAnotherLoginEndsInAnErrorAfterTheWait() throws {
        _ = try XCTUnwrap(entry())
        let fd = open(directory + "/alice", O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        // flock locks belong to the open file description: another one is another holder.
        XCTAssertEqual(flock(fd, LOCK_EX), 0)
        var slow = ledger
        slow.lockMilliseconds = 30
        guard case let .failure(why) = slow.update("alice", { $0.failures = 9 }) else {
            return XCTFail("a held lock was not waited for")
        }
        XCTAssertEqual(why.description, directory + "/alice: locked by another login for over 30 ms")
        XCTAssertEqual(content(), AttemptRecord().line, "nothing written without the lock")
    }
}

/// Small file facts for the assertions, through libc only.
enum SafeFileNames {
    static func list(_ directory: String) -> [String] { SafeFile.list(directory) }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    struct Unreadable: Error {}

    static func text(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { throw Unreadable() }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &buffer, buffer.count)
        guard n >= 0 else { throw Unreadable() }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }
}

import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SafeFile's rules as a caller meets them: the bytes of a file it may trust, and for every
/// other file the refusal whose text names the path and what is wrong with it.
final class SafeFileTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-safefile-" }

    func path(_ name: String) -> String { root + "/" + name }

    func refusal(_ name: String, rule: FileRule) -> SafeFileError? {
        do {
            _ = try SafeFile.read(path(name), rule: rule)
            return nil
        } catch {
            return error
        }
    }

    func mode(_ name: String) -> UInt32 {
        var st = stat()
        XCTAssertEqual(lstat(path(name), &st), 0, name)
        return UInt32(st.st_mode) & 0o7777
    }

    // MARK: - read

    func testASecretOfRootWithModeSixHundredIsReadWhole() throws {
        write("key", "secret bytes\n", mode: 0o600)
        XCTAssertEqual(try SafeFile.read(path("key"), rule: .secret), Array("secret bytes\n".utf8))
    }

    func testAMissingFileSaysItDoesNotExist() {
        let error = refusal("absent", rule: .secret)
        XCTAssertEqual(error, .missing(path("absent")))
        XCTAssertEqual(error?.description, path("absent") + ": does not exist")
    }

    func testASymbolicLinkIsRefusedEvenToASafeFile() {
        write("real", "x", mode: 0o600)
        XCTAssertEqual(symlink(path("real"), path("link")), 0)
        let error = refusal("link", rule: .secret)
        XCTAssertEqual(error, .symlink(path("link")))
        XCTAssertEqual(error?.description, path("link") + ": is a symbolic link")
    }

    func testADirectoryIsNotARegularFile() {
        XCTAssertEqual(mkdir(path("dir"), 0o700), 0)
        let error = refusal("dir", rule: .secret)
        XCTAssertEqual(error, .notRegular(path("dir")))
        XCTAssertEqual(error?.description, path("dir") + ": is not a regular file")
    }

    func testAFileOfAnotherOwnerIsRefusedWithItsUID() {
        write("theirs", "x", mode: 0o600)
        XCTAssertEqual(chown(path("theirs"), 1000, 1000), 0)
        let error = refusal("theirs", rule: .secret)
        XCTAssertEqual(error, .wrongOwner(path("theirs"), uid: 1000))
        XCTAssertEqual(error?.description, path("theirs") + ": owned by uid 1000, must be owned by root")
    }

    func testAnyOwnerIsAcceptedWhenTheRuleNamesNone() throws {
        write("theirs", "ok", mode: 0o600)
        XCTAssertEqual(chown(path("theirs"), 1000, 1000), 0)
        let rule = FileRule(owner: nil, forbiddenBits: 0o077, maxBytes: 16)
        XCTAssertEqual(try SafeFile.read(path("theirs"), rule: rule), Array("ok".utf8))
    }

    func testASecretReadableByTheGroupIsTooOpen() {
        write("key", "x", mode: 0o640)
        let error = refusal("key", rule: .secret)
        XCTAssertEqual(error?.description, path("key") + ": mode 640 is too open")
    }

    func testConfigurationMayBeReadByAllButWrittenByRootOnly() throws {
        write("open.conf", "a = 1\n", mode: 0o644)
        XCTAssertEqual(try SafeFile.read(path("open.conf"), rule: .config), Array("a = 1\n".utf8))
        write("group.conf", "a = 1\n", mode: 0o664)
        XCTAssertEqual(refusal("group.conf", rule: .config)?.description, path("group.conf") + ": mode 664 is too open")
        write("world.conf", "a = 1\n", mode: 0o646)
        XCTAssertEqual(refusal("world.conf", rule: .config)?.description, path("world.conf") + ": mode 646 is too open")
    }

    func testAFileLargerThanTheRuleIsRefusedWithTheLimit() throws {
        write("big", "0123456789A", mode: 0o600)
        let rule = FileRule(forbiddenBits: 0o077, maxBytes: 10)
        let error = refusal("big", rule: rule)
        XCTAssertEqual(error, .tooLarge(path("big"), limit: 10))
        XCTAssertEqual(error?.description, path("big") + ": larger than 10 bytes")
        write("fits", "0123456789", mode: 0o600)
        XCTAssertEqual(try SafeFile.read(path("fits"), rule: rule).count, 10)
    }

    // MARK: - write

    func testWriteAtomicallySetsTheExactModeWhateverTheUmask() throws {
        let old = umask(0o077)
        defer { umask(old) }
        try SafeFile.writeAtomically(path("pins"), Array("{}\n".utf8), mode: 0o644)
        XCTAssertEqual(mode("pins"), 0o644)
        umask(0)
        try SafeFile.writeAtomically(path("grant"), Array("g".utf8), mode: 0o600)
        XCTAssertEqual(mode("grant"), 0o600)
    }

    func testWriteAtomicallyReplacesTheContentAndLeavesNoTemporaryFile() throws {
        write("state", "old content that is longer", mode: 0o600)
        try SafeFile.writeAtomically(path("state"), Array("new".utf8), mode: 0o600, durable: false)
        XCTAssertEqual(try SafeFile.read(path("state"), rule: .secret), Array("new".utf8))
        XCTAssertEqual(SafeFile.list(root), ["state"])
    }

    func testWriteAtomicallyOverALinkReplacesTheLinkNotItsTarget() throws {
        write("target", "keep me", mode: 0o600)
        XCTAssertEqual(symlink(path("target"), path("link")), 0)
        try SafeFile.writeAtomically(path("link"), Array("mine".utf8), mode: 0o600)
        XCTAssertEqual(try SafeFile.read(path("target"), rule: .secret), Array("keep me".utf8))
        XCTAssertEqual(try SafeFile.read(path("link"), rule: .secret), Array("mine".utf8))
    }

    func testWriteAtomicallyIntoAMissingDirectoryNamesTheTemporaryFile() {
        XCTAssertThrowsError(try SafeFile.writeAtomically(path("none/file"), [1], mode: 0o600)) { error in
            let text = (error as? SafeFileError)?.description ?? ""
            XCTAssertTrue(text.hasPrefix(path("none/file") + ".tmp."), text)
            XCTAssertTrue(text.hasSuffix(": No such file or directory"), text)
        }
    }

    // MARK: - directories

    func testCheckDirectoryAcceptsAPrivateDirectoryAndRefusesAnOpenOne() throws {
        XCTAssertEqual(mkdir(path("private"), 0o700), 0)
        XCTAssertNoThrow(try SafeFile.checkDirectory(path("private"), rule: .privateDirectory))
        XCTAssertEqual(mkdir(path("open"), 0o700), 0)
        XCTAssertEqual(chmod(path("open"), 0o755), 0)
        XCTAssertThrowsError(try SafeFile.checkDirectory(path("open"), rule: .privateDirectory)) { error in
            XCTAssertEqual((error as? SafeFileError)?.description, path("open") + ": mode 755 is too open")
        }
    }

    func testCheckDirectoryRefusesAFileALinkAndNothing() {
        write("file", "x", mode: 0o600)
        XCTAssertEqual(mkdir(path("dir"), 0o700), 0)
        XCTAssertEqual(symlink(path("dir"), path("dirlink")), 0)
        XCTAssertThrowsError(try SafeFile.checkDirectory(path("file"), rule: .privateDirectory)) {
            XCTAssertEqual($0 as? SafeFileError, .notDirectory(path("file")))
        }
        XCTAssertThrowsError(try SafeFile.checkDirectory(path("dirlink"), rule: .privateDirectory)) {
            XCTAssertEqual($0 as? SafeFileError, .symlink(path("dirlink")))
        }
        XCTAssertThrowsError(try SafeFile.checkDirectory(path("gone"), rule: .privateDirectory)) {
            XCTAssertEqual($0 as? SafeFileError, .missing(path("gone")))
        }
    }

    func testMakeDirectoryMakesTheParentsAndEnforcesTheModeOnTheLast() throws {
        try SafeFile.makeDirectory(path("a/b/c"), mode: 0o700)
        XCTAssertEqual(mode("a/b/c"), 0o700)
        XCTAssertEqual(mode("a/b"), 0o755 & ~UInt32(umaskNow()))
        XCTAssertEqual(chmod(path("a/b/c"), 0o777), 0)
        try SafeFile.makeDirectory(path("a/b/c"), mode: 0o711)
        XCTAssertEqual(mode("a/b/c"), 0o711)
        write("plain", "x", mode: 0o600)
        XCTAssertThrowsError(try SafeFile.makeDirectory(path("plain"), mode: 0o700)) {
            XCTAssertEqual($0 as? SafeFileError, .notDirectory(path("plain")))
        }
    }

    func umaskNow() -> mode_t {
        let current = umask(0o022)
        umask(current)
        return current
    }

    func testRemoveListAndExists() throws {
        write("b", "x")
        write("a", "x")
        XCTAssertEqual(symlink("/nonexistent", path("c")), 0)
        XCTAssertEqual(SafeFile.list(root), ["a", "b", "c"])
        XCTAssertTrue(SafeFile.exists(path("c")), "a dangling link exists: links are not followed")
        try SafeFile.remove(path("a"))
        XCTAssertFalse(SafeFile.exists(path("a")))
        XCTAssertNoThrow(try SafeFile.remove(path("a")), "a missing file is already removed")
        XCTAssertEqual(SafeFile.list(root + "/missing"), [])
    }

    // MARK: - the caller's file-size limit

    func testFileSizeLimitFollowsTheSoftLimitAndWriteAtomicallyRespectsIt() throws {
        var saved = rlimit()
        XCTAssertEqual(getrlimit(Int32(RLIMIT_FSIZE.rawValue), &saved), 0)
        defer { _ = setrlimit(Int32(RLIMIT_FSIZE.rawValue), &saved) }
        var low = saved
        low.rlim_cur = 100
        XCTAssertEqual(setrlimit(Int32(RLIMIT_FSIZE.rawValue), &low), 0)
        XCTAssertTrue(FileSizeLimit.permits(size: 100))
        XCTAssertFalse(FileSizeLimit.permits(size: 101))
        XCTAssertFalse(FileSizeLimit.permits(size: -1))
        XCTAssertThrowsError(
            try SafeFile.writeAtomically(path("big"), [UInt8](repeating: 0, count: 101), mode: 0o600)
        ) { error in
            XCTAssertEqual(error as? SafeFileError, .io(path("big"), errno: EFBIG))
        }
        XCTAssertFalse(SafeFile.exists(path("big")))
        _ = setrlimit(Int32(RLIMIT_FSIZE.rawValue), &saved)
        if saved.rlim_cur == rlim_t.max { XCTAssertTrue(FileSizeLimit.permits(size: Int.max)) }
    }
}

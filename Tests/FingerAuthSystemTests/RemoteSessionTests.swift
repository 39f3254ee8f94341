import CSystem
import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The remote-session facts read from files laid out as the kernel, logind, sshd and the
/// module's own session line leave them, in a temporary folder.
final class RemoteSessionTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-remote-" }

    func session(id: String = "7") -> RemoteSession {
        write("sessionid", id)
        mkdir(root + "/records", 0o755)
        mkdir(root + "/logind", 0o755)
        var s = RemoteSession(recordDirectory: root + "/records")
        s.sessionIDFile = root + "/sessionid"
        s.logindDirectory = root + "/logind"
        s.utmpFile = root + "/utmp"
        s.statFile = root + "/stat"
        write("stat", "123 (fa pamtest) S 1 123 123 0 -1 4194560 0 0")
        return s
    }

    func testNoFactIsLocal() {
        XCTAssertNil(session().remoteReason(tty: "pts/3"))
    }

    func testUnsetAuditSessionIsLocalAndCannotRecord() {
        let s = session(id: "4294967295")
        XCTAssertNil(s.auditSessionID())
        guard case .failure = s.record(host: "10.0.0.1") else { return XCTFail("recorded without a session") }
    }

    func testRecordedSessionIsRemote() {
        let s = session()
        guard case .success(7) = s.record(host: "10.0.0.1") else { return XCTFail("not recorded") }
        XCTAssertEqual(s.remoteReason(tty: nil), "audit session 7 recorded as remote (10.0.0.1)")
        var st = stat()
        XCTAssertEqual(stat(root + "/records/7", &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o644)
    }

    func testARecordOthersCouldWriteIsNotBelieved() {
        let s = session()
        write("records/7", "planted\n", mode: 0o666)
        XCTAssertNil(s.remoteReason(tty: nil))
    }

    func testLogindRemoteSession() {
        let s = session()
        write("logind/7", "UID=1000\nREMOTE=1\nREMOTE_HOST=10.0.0.9\n")
        XCTAssertEqual(s.remoteReason(tty: nil), "logind session 7 is remote")
        write("logind/7", "UID=1000\nREMOTE=0\n")
        XCTAssertNil(s.remoteReason(tty: nil))
    }

    func testUtmpHostOfThePAMTTYOrTheControllingTerminal() {
        let s = session()
        writeUtmp([
            (USER_PROCESS, "pts/3", "192.0.2.7"), (USER_PROCESS, "pts/4", ":0"), (DEAD_PROCESS, "pts/5", "192.0.2.8"),
        ])
        XCTAssertEqual(s.remoteReason(tty: "/dev/pts/3"), "utmp: pts/3 from 192.0.2.7")
        XCTAssertNil(s.remoteReason(tty: "pts/4"), "an X display is local")
        XCTAssertNil(s.remoteReason(tty: "pts/5"), "a dead entry is not a login")
        // The controlling terminal counts even when the application sets no PAM_TTY:
        // tty_nr 34819 = major 136, minor 3 = pts/3.
        write("stat", "123 (fa pamtest) S 1 123 123 34819 -1 4194560 0 0")
        XCTAssertEqual(s.remoteReason(tty: nil), "utmp: pts/3 from 192.0.2.7")
    }

    /// Debian's /run/utmp: root:utmp 0664 (utempter and login write it through the group).
    func testDebiansUtmpRootUtmp0664IsBelieved() {
        let s = session()
        writeUtmp([(USER_PROCESS, "pts/77", "192.0.2.7")], mode: 0o664, group: utmpGroup())
        var st = stat()
        XCTAssertEqual(stat(root + "/utmp", &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o664)
        XCTAssertEqual(st.st_uid, 0)
        XCTAssertEqual(st.st_gid, utmpGroup())
        XCTAssertEqual(s.remoteReason(tty: "pts/77"), "utmp: pts/77 from 192.0.2.7")
    }

    func testUtmpOwnedByAUserOrWritableByAllIsNotBelievedAndTheLogSaysWhy() {
        var s = session()
        var traced: [String] = []
        s.trace = { traced.append($0) }
        writeUtmp([(USER_PROCESS, "pts/77", "192.0.2.7")], mode: 0o666, group: utmpGroup())
        XCTAssertNil(s.remoteReason(tty: "pts/77"))
        XCTAssertEqual(traced, ["utmp skipped: \(root)/utmp: mode 666 is too open"])
        writeUtmp([(USER_PROCESS, "pts/77", "192.0.2.7")], mode: 0o644, owner: 1000)
        traced = []
        XCTAssertNil(s.remoteReason(tty: "pts/77"))
        XCTAssertEqual(traced, ["utmp skipped: \(root)/utmp: owned by uid 1000, must be owned by root"])
    }

    /// The gid of group `utmp` (43 on Debian).
    func utmpGroup() -> gid_t {
        guard let entry = getgrnam("utmp") else { return 43 }
        return entry.pointee.gr_gid
    }

    func writeUtmp(_ entries: [(Int32, String, String)], mode: mode_t = 0o644, owner: uid_t = 0, group: gid_t = 0) {
        var bytes: [UInt8] = []
        for (type, line, host) in entries {
            var entry = utmp()
            entry.ut_type = Int16(type)
            withUnsafeMutableBytes(of: &entry.ut_line) { raw in
                for (i, b) in line.utf8.enumerated() where i < raw.count { raw[i] = b }
            }
            withUnsafeMutableBytes(of: &entry.ut_host) { raw in
                for (i, b) in host.utf8.enumerated() where i < raw.count { raw[i] = b }
            }
            withUnsafeBytes(of: entry) { bytes.append(contentsOf: $0) }
        }
        let path = root + "/utmp"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        XCTAssertEqual(fchown(fd, owner, group), 0)
        XCTAssertEqual(fchmod(fd, mode), 0)
        close(fd)
    }
}

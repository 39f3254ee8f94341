import FingerAuthLoginSystem
import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The local-seat rule on files laid out as the kernel (`/proc`), logind
/// (`/run/systemd/…`) and the module's session line leave them, in a temporary folder:
/// logind does not run on these machines, so its mode is tested with stand-in state.
final class LocalSeatTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-seat-" }
    var traced: [String] = []

    override func setUp() {
        super.setUp()
        for dir in ["self", "proc", "records", "systemd", "systemd/sessions", "systemd/users"] {
            mkdir(root + "/" + dir, 0o755)
        }
        traced = []
    }

    /// tty_nr of /proc/self/stat: major 136 is pts, major 4 the virtual consoles.
    func onTerminal(_ ttyNr: Int) {
        write("self/stat", "123 (fa pamtest) S 1 123 123 \(ttyNr) -1 4194560 0 0")
    }
    static let pts3 = 34819, tty2 = 1026

    func seat(logind: Bool, sessionID: String = "4294967295", cgroup: String = "0::/") -> LocalSeat {
        write("self/sessionid", sessionID)
        write("self/cgroup", cgroup + "\n")
        if logind { mkdir(root + "/systemd/system", 0o755) }
        var session = RemoteSession(recordDirectory: root + "/records")
        session.sessionIDFile = root + "/self/sessionid"
        session.statFile = root + "/self/stat"
        session.logindDirectory = root + "/systemd/sessions"
        var seat = LocalSeat(session: session)
        seat.logind.systemMarker = root + "/systemd/system"
        seat.logind.sessionsDirectory = root + "/systemd/sessions"
        seat.logind.usersDirectory = root + "/systemd/users"
        seat.logind.cgroupFile = root + "/self/cgroup"
        seat.procDirectory = root + "/proc"
        seat.trace = { [unowned self] in self.traced.append($0) }
        return seat
    }

    /// A process `pid` of audit session `id` whose login uid is `uid`.
    func process(_ pid: Int, session id: Int, uid: Int) {
        mkdir(root + "/proc/\(pid)", 0o755)
        write("proc/\(pid)/sessionid", "\(id)")
        write("proc/\(pid)/loginuid", "\(uid)")
    }

    func reason(_ seat: LocalSeat, uids: Set<UInt32> = [1000]) -> String? {
        seat.notLocalReason(uids: uids, name: { $0 == 1000 ? "alice" : "uid \($0)" })
    }

    // MARK: - records mode (no logind)

    func testRecordsModeAPseudoTerminalIsLocalWhileNoRemoteSessionOfTheUserIsLive() {
        let s = seat(logind: false)
        onTerminal(Self.pts3)
        XCTAssertEqual(s.mode, .records)
        XCTAssertNil(reason(s))
        write("records/12", "192.0.2.7\n") // recorded, but no process holds session 12 any more
        process(300, session: 13, uid: 1000)
        XCTAssertNil(reason(s))
        process(301, session: 12, uid: 1001) // live, but another user's
        XCTAssertNil(reason(s))
    }

    func testRecordsModeALiveRemoteSessionOfTheUserMakesAPseudoTerminalNotLocal() {
        let s = seat(logind: false)
        onTerminal(Self.pts3)
        write("records/12", "192.0.2.7\n")
        process(300, session: 12, uid: 1000) // the ssh session, or a tmux left behind by it
        XCTAssertEqual(
            reason(s),
            "remote session of alice live (audit session 12 from 192.0.2.7); this one (on pts/3) not positively local")
        XCTAssertNil(reason(s, uids: [1001]), "only the named users' sessions count")
        // No terminal at all (a job, a graphical PAM host) is no more local than a pty.
        write("self/stat", "123 (fa pamtest) S 1 123 123 0 -1 4194560 0 0")
        XCTAssertEqual(
            reason(s),
            "remote session of alice live (audit session 12 from 192.0.2.7); this one (on no terminal) not positively local"
        )
    }

    func testRecordsModeAVirtualConsoleIsLocalEvenWhileARemoteSessionIsLive() {
        let s = seat(logind: false)
        write("records/12", "192.0.2.7\n")
        process(300, session: 12, uid: 1000)
        onTerminal(Self.tty2)
        XCTAssertNil(reason(s))
    }

    func testARecordOthersCouldWriteDoesNotMakeASessionLive() {
        let s = seat(logind: false)
        onTerminal(Self.pts3)
        write("records/12", "planted\n", mode: 0o666)
        process(300, session: 12, uid: 1000)
        XCTAssertNil(reason(s))
    }

    // MARK: - logind mode (stand-in state)

    func session(
        _ id: String, seat: String = "seat0", active: Bool = true, remote: Bool = false, state: String = "active",
        tty: String = "tty2", host: String? = nil
    ) {
        write(
            "systemd/sessions/\(id)",
            "# This is private data. Do not parse.\nUID=1000\nUSER=alice\nACTIVE=\(active ? 1 : 0)\n"
                + "STATE=\(state)\nREMOTE=\(remote ? 1 : 0)\nTYPE=tty\nCLASS=user\nSEAT=\(seat)\nTTY=\(tty)\n"
                + (host.map { "REMOTE_HOST=\($0)\n" } ?? ""))
    }

    func user(sessions: String, display: String = "") {
        write("systemd/users/1000", "NAME=alice\nSTATE=active\nDISPLAY=\(display)\nSESSIONS=\(sessions)\n")
    }

    func testLogindSeatSessionOnItsOwnVirtualConsoleIsLocal() {
        let s = seat(logind: true, cgroup: "0::/user.slice/user-1000.slice/session-5.scope")
        session("5")
        onTerminal(Self.tty2)
        XCTAssertEqual(s.mode, .logind)
        XCTAssertNil(reason(s))
        XCTAssertTrue(
            traced.contains { $0.hasPrefix("local seat: logind session 5 (cgroup): seat seat0, active true") },
            "\(traced)")
    }

    func testLogindSeatSessionOnAPseudoTerminalIsLocalUnlessARemoteSessionOfTheUserIsLive() {
        let s = seat(logind: true, cgroup: "0::/user.slice/user-1000.slice/session-5.scope")
        session("5")
        onTerminal(Self.pts3)
        user(sessions: "5")
        XCTAssertNil(reason(s))
        session("9", seat: "", remote: true, tty: "pts/0", host: "192.0.2.9")
        user(sessions: "5 9")
        XCTAssertEqual(
            reason(s),
            "remote session of alice live (logind session 9 from 192.0.2.9); this one (logind session 5 on seat0, on pts/3) not positively local"
        )
        session("9", seat: "", remote: true, state: "closing", tty: "pts/0", host: "192.0.2.9")
        XCTAssertNil(reason(s), "a remote login that ended is not live in logind's view")
    }

    func testLogindSessionWithoutSeatOrNotActiveOrRemoteIsNotLocal() {
        let s = seat(
            logind: true,
            cgroup:
                "1:name=systemd:/user.slice/user-1000.slice/session-5.scope\n0::/user.slice/user-1000.slice/session-5.scope"
        )
        onTerminal(Self.tty2)
        session("5", seat: "")
        XCTAssertEqual(reason(s), "logind session 5 is on no seat")
        session("5", active: false)
        XCTAssertEqual(reason(s), "logind session 5 is not the active one on seat0")
        session("5", remote: true)
        XCTAssertEqual(reason(s), "logind session 5 is remote")
        _ = unlink(root + "/systemd/sessions/5")
        XCTAssertEqual(reason(s), "logind has no record of session 5 (cgroup)")
    }

    func testLogindNoSessionOfItsOwnIsNotLocal() {
        let s = seat(logind: true, cgroup: "0::/system.slice/cron.service")
        onTerminal(Self.pts3)
        XCTAssertEqual(reason(s), "no logind session of its own (cron.service: cron, at, a service)")
    }

    func testLogindAuditSessionIDStandsInForAMissingCGroupSession() {
        let s = seat(logind: true, sessionID: "7")
        session("7")
        onTerminal(Self.tty2)
        XCTAssertNil(reason(s))
        XCTAssertTrue(traced.contains { $0.hasPrefix("local seat: logind session 7 (audit session id)") }, "\(traced)")
    }

    func testLogindUserManagerIsLocalOnlyWhileTheUsersGraphicalSessionIsInFrontAndNoRemoteSessionIsLive() {
        // A desktop's terminal emulator runs in the user's service manager, in no session.
        let s = seat(
            logind: true, cgroup: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1.scope")
        onTerminal(Self.pts3)
        XCTAssertEqual(
            reason(s),
            "started by alice's service manager (a user unit), and alice has no active local session on a seat")
        session("5")
        user(sessions: "5", display: "5")
        XCTAssertNil(reason(s))
        session("9", seat: "", remote: true, tty: "pts/0", host: "192.0.2.9")
        user(sessions: "5 9", display: "5")
        XCTAssertEqual(
            reason(s),
            "remote session of alice live (logind session 9 from 192.0.2.9); this one (a user unit of alice, on pts/3) not positively local"
        )
        session("5", active: false)
        XCTAssertEqual(
            reason(s),
            "started by alice's service manager (a user unit), and alice has no active local session on a seat")
    }

    func testACGroupMadeInsideTheUsersOwnSubtreeIsNotASession() {
        // The user may create cgroups under user@1000.service: a `session-5.scope` there is
        // not logind's session 5 (systemd reads the first unit of the path).
        let s = seat(logind: true, cgroup: "0::/user.slice/user-1000.slice/user@1000.service/session-5.scope")
        session("5")
        onTerminal(Self.tty2)
        XCTAssertEqual(
            reason(s),
            "started by alice's service manager (a user unit), and alice has no active local session on a seat")
    }

    func testLogindFilesOthersCouldWriteAreNotBelieved() {
        let s = seat(logind: true, cgroup: "0::/user.slice/user-1000.slice/session-5.scope")
        session("5")
        chmod(root + "/systemd/sessions/5", 0o666)
        onTerminal(Self.tty2)
        XCTAssertEqual(reason(s), "logind has no record of session 5 (cgroup)")
    }

    func testVirtualConsoleNames() {
        XCTAssertTrue(LocalSeat.isVirtualConsole("tty1"))
        XCTAssertTrue(LocalSeat.isVirtualConsole("tty63"))
        XCTAssertFalse(LocalSeat.isVirtualConsole("tty0"))
        XCTAssertFalse(LocalSeat.isVirtualConsole("tty64"))
        XCTAssertFalse(LocalSeat.isVirtualConsole("pts/1"))
        XCTAssertFalse(LocalSeat.isVirtualConsole("ttyS0"))
    }
}

import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The agent's socket as the module and the agent use it, over real Unix sockets: lines in
/// and out under deadlines, the bounds, the peer's going, and who serves the socket.
final class SocketLinesTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-socket-" }

    var ends: [SocketLines] = []

    /// Two connected non-blocking ends; the second is read and written raw through its fd.
    func pair(maxLine: Int = 64, maxTotal: Int = 256) -> (SocketLines, Int32) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        XCTAssertEqual(socketpair(AF_UNIX, type, 0, &fds), 0)
        let lines = SocketLines(fd: fds[0], maxLineBytes: maxLine, maxTotalBytes: maxTotal)
        ends.append(lines)
        return (lines, fds[1])
    }

    func raw(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }, bytes.count)
    }

    func rawRead(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = Glibc.read(fd, &buffer, buffer.count)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }

    override func tearDown() {
        for end in ends { end.close() }
        ends = []
        super.tearDown()
    }

    func testALineArrivesWithoutItsNewlineAndTwoInOneWriteOneByOne() {
        let (lines, peer) = pair()
        defer { close(peer) }
        raw(peer, "HELLO 1\nSCAN alice\n")
        XCTAssertEqual(lines.readLine(withinMilliseconds: 500), .line("HELLO 1"))
        XCTAssertEqual(lines.readLine(withinMilliseconds: 500), .line("SCAN alice"))
    }

    func testASentLineEndsInANewline() {
        let (lines, peer) = pair()
        defer { close(peer) }
        XCTAssertTrue(lines.send("MATCH right-index-finger", withinMilliseconds: 500))
        XCTAssertEqual(rawRead(peer), "MATCH right-index-finger\n")
    }

    func testNothingSentIsATimeoutAfterTheWait() {
        let (lines, peer) = pair()
        defer { close(peer) }
        let before = MonotonicInstant.now()
        XCTAssertEqual(lines.readLine(withinMilliseconds: 60), .timedOut)
        XCTAssertGreaterThanOrEqual(MonotonicInstant.now().milliseconds - before.milliseconds, 55)
    }

    func testAPeerThatHangsUpIsClosedAndGone() {
        let (lines, peer) = pair()
        XCTAssertFalse(lines.peerGone)
        close(peer)
        XCTAssertTrue(lines.peerGone)
        XCTAssertEqual(lines.readLine(withinMilliseconds: 500), .closed)
    }

    func testALineLongerThanTheLimitIsGarbage() {
        let (lines, peer) = pair(maxLine: 16)
        defer { close(peer) }
        raw(peer, String(repeating: "x", count: 40) + "\n")
        XCTAssertEqual(lines.readLine(withinMilliseconds: 500), .garbage)
    }

    func testMoreThanTheTotalIsGarbageEvenInShortLines() {
        let (lines, peer) = pair(maxLine: 16, maxTotal: 32)
        defer { close(peer) }
        raw(peer, String(repeating: "abcdefg\n", count: 4))
        for _ in 0..<4 { XCTAssertEqual(lines.readLine(withinMilliseconds: 200), .line("abcdefg")) }
        raw(peer, "abcdefg\n")
        XCTAssertEqual(lines.readLine(withinMilliseconds: 200), .garbage, "40 bytes in all, past the 32 allowed")
    }

    func testBytesAfterTheLastNewlineAtTheEndAreGarbage() {
        let (lines, peer) = pair()
        raw(peer, "OK\nhalf a li")
        close(peer)
        XCTAssertEqual(lines.readLine(withinMilliseconds: 500), .line("OK"))
        XCTAssertEqual(lines.readLine(withinMilliseconds: 500), .garbage)
    }

    func testASendToAPeerThatNeverReadsFailsAtTheDeadline() {
        let (lines, peer) = pair()
        defer { close(peer) }
        let big = String(repeating: "y", count: 4 << 20)
        let before = MonotonicInstant.now()
        XCTAssertFalse(lines.send(big, withinMilliseconds: 80))
        XCTAssertGreaterThanOrEqual(MonotonicInstant.now().milliseconds - before.milliseconds, 75)
    }

    func testAClosedEndNeitherSendsNorReads() {
        let (lines, peer) = pair()
        defer { close(peer) }
        lines.close()
        XCTAssertFalse(lines.send("x", withinMilliseconds: 10))
        XCTAssertTrue(lines.peerGone)
        XCTAssertNil(lines.peerUID())
        XCTAssertEqual(lines.readLine(withinMilliseconds: 10), .closed)
    }

    func testThePeersUIDIsTheKernels() {
        let (lines, peer) = pair()
        defer { close(peer) }
        XCTAssertEqual(lines.peerUID(), geteuid())
    }

    // MARK: - the connector

    /// A listening Unix socket at `path`, listen(2) called as `uid` (its SO_PEERCRED).
    func listener(_ path: String, as uid: uid_t = 0) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        XCTAssertEqual(bound, 0)
        if uid != 0 { XCTAssertEqual(seteuid(uid), 0) }
        XCTAssertEqual(listen(fd, 4), 0)
        if uid != 0 { XCTAssertEqual(seteuid(0), 0) }
        return fd
    }

    func testNoSocketIsUnreachableWithTheSystemsWords() {
        guard case let .failure(why) = AgentSocketConnector().connect(root + "/agent.sock") else {
            return XCTFail("connected to nothing")
        }
        XCTAssertEqual(why, AgentUnreachable("No such file or directory"))
    }

    func testASocketServedByRootIsTheAgent() throws {
        let server = listener(root + "/agent.sock")
        defer { close(server) }
        guard case let .success(channel) = AgentSocketConnector().connect(root + "/agent.sock") else {
            return XCTFail("root's socket refused")
        }
        (channel as? SocketLines)?.close()
    }

    func testASocketServedByAnotherUserIsNotTheAgent() {
        let server = listener(root + "/agent.sock", as: 1000)
        defer { close(server) }
        guard case let .failure(why) = AgentSocketConnector().connect(root + "/agent.sock") else {
            return XCTFail("a user's socket was believed")
        }
        XCTAssertEqual(why, AgentUnreachable("the socket is served by uid 1000, not root"))
    }

    // MARK: - the helper process

    func testTheHelperRunsInLoginModeAndItsEndIsDescribedInWords() {
        XCTAssertEqual(
            HelperProcess.arguments("/usr/libexec/fingerauth-login"), ["/usr/libexec/fingerauth-login", "--login"])
        XCTAssertEqual(HelperProcess.describe(.exited(3)), "exit status 3")
        XCTAssertEqual(HelperProcess.describe(.signaled(9)), "killed by signal 9")
        XCTAssertEqual(HelperProcess.describe(.unknown), "status unknown")
    }
}

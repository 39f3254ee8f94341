import XCTest
import FingerAuthCore

final class LoginFlowTests: XCTestCase {
    func flow(scanner: FingerprintScanner = ScriptedScanner(outcome: .matched(finger: "right-index-finger")),
              store: EnrollmentStore = FakeStore(), transport: AuthenticatorTransport = FakeTransport.accepting(),
              conversation: RecordingConversation = RecordingConversation(), random: RandomSource = FixedRandom()) -> LoginFlow {
        LoginFlow(scanner: scanner, store: store, transport: transport, conversation: conversation,
                  clock: FixedClock(), random: random, users: KnownUsers(), hostName: "fallback-host")
    }

    func testMatchedFingerAndAcceptedTokenSucceeds() {
        let talk = RecordingConversation()
        let transport = FakeTransport.accepting()
        let outcome = flow(transport: transport, conversation: talk).authenticate(LoginRequest(user: "alice", service: "sudo"), options: testOptions())
        XCTAssertEqual(outcome.code, .success)
        XCTAssertEqual(talk.infos, [LoginFlow.Text.placeFinger])
        XCTAssertEqual(talk.errors, [])
        let sent = try? JSONParser().parse(transport.sent[0])
        let jwt = try? CompactJWT(parsing: sent?["jwt"]?.stringValue ?? "")
        XCTAssertEqual(jwt?.claims["sub"], .string("alice"))
        XCTAssertEqual(jwt?.claims["iss"], .string("host-1"))
        XCTAssertEqual(jwt?.claims["aud"], .string("aud-1"))
        XCTAssertEqual(jwt?.claims["exp"], .integer(1_800_000_030))
        XCTAssertEqual(jwt?.header["kid"], .string("kid-1"))
        XCTAssertEqual(jwt?.claims["service"], .string("sudo"))
    }

    func testAcceptedForAnotherUserIsAuthError() {
        let outcome = flow(transport: FakeTransport.accepting(sub: "mallory")).authenticate(LoginRequest(user: "alice", service: "sudo"), options: testOptions())
        XCTAssertEqual(outcome.code, .authError)
    }

    func testEveryNonSuccessPathHasItsCode() {
        let cases: [(String, LoginFlow, LoginRequest, PAMCode)] = [
            ("bad name", flow(), LoginRequest(user: "../etc", service: "s"), .userUnknown),
            ("unknown user", flow(), LoginRequest(user: "bob", service: "s"), .userUnknown),
            ("remote", flow(), LoginRequest(user: "alice", service: "sshd", remoteHost: "10.0.0.1"), .ignore),
            ("remote loopback", flow(), LoginRequest(user: "alice", service: "sshd", remoteHost: "127.0.0.1"), .ignore),
            ("ssh session", flow(), LoginRequest(user: "alice", service: "sudo", inSSHSession: true), .ignore),
            ("not enrolled", flow(store: FakeStore(state: .notEnrolled)), LoginRequest(user: "alice", service: "s"), .ignore),
            ("unsafe state", flow(store: FakeStore(state: .unsafe("mode 777"))), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("key unreadable", flow(store: FakeStore(key: .failure(KeyLoadError("x")))), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("max tries", flow(scanner: ScriptedScanner(outcome: .tooManyTries)), LoginRequest(user: "alice", service: "s"), .maxTries),
            ("no reader", flow(scanner: ScriptedScanner([], outcome: .unavailable("no reader"))), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("signing fails", flow(store: FakeStore(key: .success(FakeSigner(fails: true)))), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("no randomness", flow(random: FixedRandom(fails: true)), LoginRequest(user: "alice", service: "s"), .systemError),
            ("unreachable", flow(transport: FakeTransport { _ in .failed("refused") }), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("401", flow(transport: FakeTransport { _ in .answered(status: 401, body: []) }), LoginRequest(user: "alice", service: "s"), .authError),
            ("500", flow(transport: FakeTransport { _ in .answered(status: 500, body: []) }), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("302", flow(transport: FakeTransport { _ in .answered(status: 302, body: []) }), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("200 garbage", flow(transport: FakeTransport { _ in .answered(status: 200, body: Array("nope".utf8)) }), LoginRequest(user: "alice", service: "s"), .authInfoUnavailable),
            ("200 ok false", flow(transport: FakeTransport { _ in .answered(status: 200, body: Array("{\"ok\":false}".utf8)) }), LoginRequest(user: "alice", service: "s"), .authError),
        ]
        for (name, f, request, expected) in cases {
            XCTAssertEqual(f.authenticate(request, options: testOptions()).code, expected, name)
        }
    }

    func testRemoteSessionRunsWithRemoteAllow() {
        var options = testOptions()
        options.allowRemote = true
        let outcome = flow().authenticate(LoginRequest(user: "alice", service: "sshd", remoteHost: "10.0.0.1"), options: options)
        XCTAssertEqual(outcome.code, .success)
    }

    func testEmptyRemoteHostIsLocal() {
        XCTAssertEqual(flow().authenticate(LoginRequest(user: "alice", service: "login", remoteHost: ""), options: testOptions()).code, .success)
    }

    func testDisabledIsIgnoredBeforeAnythingRuns() {
        var options = testOptions()
        options.disabled = true
        let scanner = ScriptedScanner(outcome: .matched(finger: "x"))
        XCTAssertEqual(flow(scanner: scanner).authenticate(LoginRequest(user: "alice", service: "s"), options: options).code, .ignore)
        XCTAssertEqual(scanner.calls, 0)
    }

    func testConversationFailureStopsTheScan() {
        let talk = RecordingConversation()
        talk.failing = true
        let outcome = flow(conversation: talk).authenticate(LoginRequest(user: "alice", service: "s"), options: testOptions())
        XCTAssertEqual(outcome.code, .conversationError)
    }

    func testNoMatchMessagesCountDown() {
        let talk = RecordingConversation()
        let scanner = ScriptedScanner([.ready(reader: "v"), .noMatch(triesLeft: 2), .noMatch(triesLeft: 1), .noMatch(triesLeft: 0)], outcome: .tooManyTries)
        _ = flow(scanner: scanner, conversation: talk).authenticate(LoginRequest(user: "alice", service: "s"), options: testOptions())
        XCTAssertEqual(talk.infos, [LoginFlow.Text.placeFinger, "No match, try again (2 left)", "No match, try again (1 left)"])
        XCTAssertEqual(talk.errors, [LoginFlow.Text.tooManyTries])
    }

    func testSilentKeepsTheScanPromptsAndDropsTheExplanations() {
        let talk = RecordingConversation()
        _ = flow(scanner: ScriptedScanner(outcome: .tooManyTries), conversation: talk)
            .authenticate(LoginRequest(user: "alice", service: "s", silent: true), options: testOptions())
        XCTAssertEqual(talk.infos, [LoginFlow.Text.placeFinger])
        XCTAssertEqual(talk.errors, [])
    }
}

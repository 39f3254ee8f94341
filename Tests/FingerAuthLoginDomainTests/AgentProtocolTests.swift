import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// The agent's line protocol, parsed strictly, and the module's side of it (`AgentLoginFlow`)
/// driven by a scripted agent.
final class AgentProtocolTests: XCTestCase {
    func testRequestsRenderAndParseBack() {
        let login = AgentRequest.login(user: "alice", service: "i3lock", silent: false)
        XCTAssertEqual(login.line, "FINGERAUTH-AGENT 1 LOGIN alice i3lock verbose")
        XCTAssertEqual(AgentRequest(line: login.line), login)
        XCTAssertEqual(
            AgentRequest(line: "FINGERAUTH-AGENT 1 LOGIN bob sudo silent"),
            .login(user: "bob", service: "sudo", silent: true))
        XCTAssertEqual(AgentRequest(line: "FINGERAUTH-AGENT 1 STATUS"), .status)
    }

    func testMalformedRequestsAreRefused() {
        for line in [
            "", "FINGERAUTH-AGENT 2 STATUS", "FINGERAUTH-AGENT 1 STATUS ", "FINGERAUTH-AGENT 1 LOGIN alice i3lock",
            "FINGERAUTH-AGENT 1 LOGIN alice i3lock loud", "FINGERAUTH-AGENT 1 LOGIN ../x i3lock silent",
            "FINGERAUTH-AGENT 1 LOGIN alice  silent", "FINGERAUTH-AGENT 1 LOGIN alice i3lock silent extra",
            "FINGERAUTH-AGENT 1 LOGIN al\u{7f}ce i3lock silent", "fingerauth-agent 1 STATUS",
            "FINGERAUTH-AGENT 1 LOGIN alice " + String(repeating: "s", count: 65) + " silent",
            "FINGERAUTH-AGENT 1 LOGIN " + String(repeating: "a", count: 300) + " x silent",
            // Names the one user-name rule refuses: another spelling of carol is not carol.
            "FINGERAUTH-AGENT 1 LOGIN Carol i3lock silent", "FINGERAUTH-AGENT 1 LOGIN carol. i3lock silent",
            "FINGERAUTH-AGENT 1 LOGIN .carol i3lock silent", "FINGERAUTH-AGENT 1 LOGIN ca..rol i3lock silent",
            "FINGERAUTH-AGENT 1 LOGIN " + String(repeating: "c", count: 33) + " i3lock silent",
        ] {
            XCTAssertNil(AgentRequest(line: line), line)
        }
    }

    func testRepliesRenderAndParseBack() {
        let replies: [AgentReply] = [
            .hello(milliseconds: 23_000), .info("Place your finger on the fingerprint reader"), .error("No match"),
            .result(
                AgentResult(
                    code: .success, reason: "finger matched", finger: "right-index-finger", kid: "kid", jti: "jti")),
            .result(AgentResult(code: .ignore, reason: "user not enrolled")),
            .status(software: "fingerauth-agent/0.1.0"),
        ]
        for reply in replies { XCTAssertEqual(AgentReply(line: reply.line), reply, reply.line) }
        XCTAssertEqual(
            AgentReply.result(AgentResult(code: .maxTries, reason: "no match")).line, "RESULT 11 - - - no match")
    }

    func testMalformedRepliesAreRefused() {
        for line in [
            "", "AGENT 2 100", "AGENT 1 -5", "AGENT 1 0100", "AGENT 1 999999999", "INFO", "INFO ", "RESULT 0 - - -",
            "RESULT 0 - - - ", "RESULT 5 - - - x", "RESULT 00 - - - x", "RESULT 0 a b x", "RESULT 0 a  b c x",
            "STATUS 1", "STATUS 2 x", "BOGUS 1", "INFO \u{1b}[2J",
        ] {
            XCTAssertNil(AgentReply(line: line), line)
        }
    }

    func testAgentSocketIsAnOptionWithItsDefault() throws {
        var options = Options()
        XCTAssertEqual(options.agentSocket, "/run/fingerauth/agent.sock")
        try options.set("agent_socket", "/run/other/agent.sock", source: "test")
        XCTAssertEqual(options.agentSocket, "/run/other/agent.sock")
        XCTAssertThrowsError(try options.set("agent_socket", "relative.sock", source: "test"))
    }

    // -- the module's side -------------------------------------------------------------

    func flow(_ agent: ScriptedAgent, talk: RecordingConversation = RecordingConversation())
        -> AgentLoginFlow<ScriptedAgent, RecordingConversation, KnownUsers, ScriptedAgent>
    {
        AgentLoginFlow(connector: agent, conversation: talk, users: KnownUsers(), time: agent)
    }

    func testResultIsRelayedWithTheTextsInOrder() {
        let agent = ScriptedAgent([
            "AGENT 1 20000", "INFO Place your finger on the fingerprint reader",
            "RESULT 0 right-index-finger kid-1 jti-1 finger right-index-finger matched, authenticator accepted",
        ])
        let talk = RecordingConversation()
        let outcome = flow(agent, talk: talk).authenticate(
            LoginRequest(user: "alice", service: "i3lock"), options: testOptions())
        XCTAssertEqual(outcome.code, .success)
        XCTAssertEqual(outcome.kid, "kid-1")
        XCTAssertEqual(talk.infos, ["Place your finger on the fingerprint reader"])
        XCTAssertEqual(agent.sent, ["FINGERAUTH-AGENT 1 LOGIN alice i3lock verbose"])
    }

    func testNoAgentIsAuthInfoUnavailableWithTheFix() {
        let agent = ScriptedAgent([])
        agent.reachable = false
        let talk = RecordingConversation()
        let outcome = flow(agent, talk: talk).authenticate(
            LoginRequest(user: "alice", service: "i3lock"), options: testOptions())
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(talk.errors, [LoginTexts.agentMissing])
        XCTAssertTrue(outcome.reason.contains("systemctl enable --now fingerauth-agent.socket"), outcome.reason)
    }

    func testEveryBrokenAnswerDeniesWithAuthInfoUnavailable() {
        for script in [
            ["AGENT 1 100", "garbage"], ["AGENT 1 100"], ["INFO hi", "AGENT 1 100", "RESULT 0 - - - late hello"],
            ["STATUS 1 x"], [],
        ] {
            let outcome = flow(ScriptedAgent(script)).authenticate(
                LoginRequest(user: "alice", service: "x"), options: testOptions())
            XCTAssertEqual(outcome.code, .authInfoUnavailable, "\(script)")
        }
    }

    func testTheModuleChecksComeBeforeTheAgentIsAsked() {
        let agent = ScriptedAgent(["RESULT 0 - - - yes"])
        var options = testOptions()
        XCTAssertEqual(
            flow(agent).authenticate(LoginRequest(user: "mallory", service: "x"), options: options).code, .userUnknown)
        let refused = flow(agent).authenticate(LoginRequest(user: "Alice", service: "x"), options: options)
        XCTAssertEqual(refused.code, .userUnknown)
        XCTAssertEqual(refused.reason, "user name not acceptable (upper-case letters)")
        XCTAssertEqual(
            flow(agent).authenticate(LoginRequest(user: "alice", service: "x", remote: "PAM_RHOST h"), options: options)
                .code,
            .ignore)
        options.disabled = true
        XCTAssertEqual(
            flow(agent).authenticate(LoginRequest(user: "alice", service: "x"), options: options).code, .ignore)
        XCTAssertEqual(agent.sent, [])
    }

    func testAFailingConversationEndsTheLogin() {
        let talk = RecordingConversation()
        talk.failing = true
        let outcome = flow(ScriptedAgent(["INFO Place your finger", "RESULT 0 - - - yes"]), talk: talk)
            .authenticate(LoginRequest(user: "alice", service: "x"), options: testOptions())
        XCTAssertEqual(outcome.code, .conversationError)
    }
}

/// An agent that answers with fixed lines; its clock advances 1 ms per look, so that a
/// script that runs out is a timeout, not a hang.
final class ScriptedAgent: AgentConnector, AgentChannel, MonotonicTime {
    var lines: [String]
    var sent: [String] = []
    var reachable = true
    private var clock: Int64 = 0

    init(_ lines: [String]) { self.lines = lines }

    func connect(_ path: String) -> Result<ScriptedAgent, AgentUnreachable> {
        reachable ? .success(self) : .failure(AgentUnreachable("No such file or directory"))
    }
    func send(_ line: String, withinMilliseconds: Int64) -> Bool {
        sent.append(line)
        return true
    }
    func readLine(withinMilliseconds ms: Int64) -> AgentRead {
        guard !lines.isEmpty else {
            clock += ms
            return .timedOut
        }
        return .line(lines.removeFirst())
    }
    func nowMilliseconds() -> Int64 {
        clock += 1
        return clock
    }
}

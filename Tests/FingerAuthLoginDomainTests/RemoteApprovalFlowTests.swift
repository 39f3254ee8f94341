import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// `remote = approve`: the decisions of the module's side, over a scripted helper and prompt.
final class RemoteApprovalFlowTests: XCTestCase {
    let terminal = TerminalTarget(path: "/dev/pts/3", device: 34819)
    let origin = ApprovalAsk(clientAddress: "10.0.0.5", terminal: "pts/3")

    func run(
        _ verdict: @escaping (LoginJob) -> HelperOutcome?, later: ((LoginJob) -> HelperOutcome?)? = nil,
        approval: ApprovalPrompt = .asked(code: "47", workstations: "ws-alice"), answer: ScriptedSecret?,
        onTerminal: Bool = true, talk: RecordingConversation = RecordingConversation(),
        store: EnrollmentStore = FakeStore(), silent: Bool = false
    ) -> (LoginOutcome, ScriptedBackground, ScriptedPrompt) {
        let login = testFlow(
            helper: ScriptedHelper.accepting(), store: store, conversation: talk, random: FixedRandom(),
            users: KnownUsers(), ledger: FakeLedger(), hostName: "web01")
        let helper = ScriptedBackground(verdict: verdict)
        let prompt = ScriptedPrompt(answer)
        let flow = RemoteApprovalFlow(
            login: login, helper: ScriptedStart(helper, approval: approval, later: later), prompt: prompt,
            terminal: onTerminal ? terminal : nil, origin: origin)
        var options = testOptions()
        options.remoteApproval = true
        let outcome = flow.authenticate(
            LoginRequest(user: "alice", service: "sudo", remote: "PAM_RHOST 10.0.0.5", silent: silent), options: options
        )
        return (outcome, helper, prompt)
    }

    func testAnApprovalEndsThePromptOnTheCallersTerminalAndSucceeds() {
        let secret = ScriptedSecret("")
        let (outcome, helper, prompt) = run(
            { .accepted(jti: $0.jti, kid: "alice-kid", finger: "remote:ws-alice") }, answer: secret)
        XCTAssertEqual(outcome.code, .success)
        XCTAssertEqual(
            prompt.asked, ["Touch the reader on ws-alice (code 47) \u{2014} Enter to wait, or type your password: "])
        let job = helper.jobs[0]
        XCTAssertEqual(job.approval, origin)
        XCTAssertEqual(job.terminal, terminal)
        XCTAssertTrue(job.text.contains("approve_rhost=10.0.0.5\napprove_tty=pts/3\n"), job.text)
        XCTAssertFalse(helper.running[0].withdrawn)
    }

    func testWithoutATerminalOfOursEnterWaitsForTheApproval() {
        let (outcome, helper, prompt) = run(
            { _ in nil }, later: { .accepted(jti: $0.jti, kid: "k", finger: "remote:ws-alice") },
            answer: ScriptedSecret(""), onTerminal: false)
        XCTAssertEqual(outcome.code, .success)
        XCTAssertEqual(
            prompt.asked,
            ["Touch the reader on ws-alice (code 47), then press Enter \u{2014} or type your password: "])
        XCTAssertNil(helper.jobs[0].terminal)
        XCTAssertEqual(helper.running[0].waitedMilliseconds, 32_000, "approve_timeout (30 s) and grace")
    }

    func testWhoAsksTravelsToTheHelperOnlyWithTheOrigin() throws {
        var options = Options()
        options.url = try AuthenticatorURL.parse("https://auth.example/v1/login").get()
        var job = LoginJob(
            user: "alice", service: "su", jti: "AAAAAAAAAAAAAAAAAAAAAA", issuer: "web01", options: options,
            terminal: nil)
        job.approval = ApprovalAsk(clientAddress: "10.0.0.5", terminal: "pts/3", caller: "mallory")
        XCTAssertTrue(job.text.contains("approve_tty=pts/3\napprove_caller=mallory\n"), job.text)
        let read = try LoginJob.parse(job.text)
        XCTAssertEqual(read.approval?.caller, "mallory")
        job.approval?.caller = ""
        XCTAssertFalse(job.text.contains("approve_caller"), "the user themself is no caller")
        job.approval = nil
        XCTAssertThrowsError(try LoginJob.parse(job.text + "approve_caller=mallory\n"), "no caller without an origin")
        job.approval = ApprovalAsk(clientAddress: "10.0.0.5", terminal: "pts/3")
        let spaced = job.text.replacingOccurrences(
            of: "approve_tty=pts/3\n", with: "approve_tty=pts/3\napprove_caller=a b\n")
        XCTAssertThrowsError(try LoginJob.parse(spaced))
    }

    func testTheUserNeedNotBeEnrolledHere() {
        let (outcome, _, _) = run(
            { .accepted(jti: $0.jti, kid: "k", finger: "remote:ws-alice") }, answer: ScriptedSecret(""),
            store: FakeStore(state: .notEnrolled))
        XCTAssertEqual(outcome.code, .success)
    }

    func testATypedPasswordWithdrawsTheRequestAndIsHandedOn() {
        let secret = ScriptedSecret("the-password")
        let (outcome, helper, _) = run({ _ in nil }, answer: secret)
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertTrue(secret.handedOn)
        XCTAssertTrue(helper.running[0].withdrawn)
        XCTAssertFalse(outcome.reason.contains("the-password"))
    }

    func testCtrlCIsNeverAPassAndWithdraws() {
        let (outcome, helper, _) = run({ _ in nil }, answer: nil)
        XCTAssertEqual(outcome.code, .conversationError)
        XCTAssertTrue(helper.running[0].withdrawn)
    }

    func testNotMeIsARefusalWithItsText() {
        let talk = RecordingConversation()
        let (outcome, _, _) = run(
            { _ in nil },
            later: {
                .refused(jti: $0.jti, kid: "k", finger: nil, code: .approvalDenied, reason: "Not me on ws-alice")
            },
            answer: ScriptedSecret(""), talk: talk)
        XCTAssertEqual(outcome.code, .authError)
        XCTAssertEqual(talk.errors, ["Not approved: \"Not me\" on your workstation"])
    }

    func testTheEndOfTheApprovalIsSaidEvenUnderPAMSilent() {
        let talk = RecordingConversation()
        let silentLogin = testFlow(
            helper: ScriptedHelper.accepting(), store: FakeStore(), conversation: talk, random: FixedRandom(),
            users: KnownUsers(), ledger: FakeLedger(), hostName: "web01")
        let helper = ScriptedBackground(verdict: { _ in nil })
        let flow = RemoteApprovalFlow(
            login: silentLogin,
            helper: ScriptedStart(
                helper, approval: .asked(code: "47", workstations: "ws-alice"),
                later: { .refused(jti: $0.jti, kid: "k", finger: nil, code: .approvalDenied, reason: "Not me") }),
            prompt: ScriptedPrompt(ScriptedSecret("")), terminal: terminal, origin: origin)
        var options = testOptions()
        options.remoteApproval = true
        let outcome = flow.authenticate(
            LoginRequest(user: "alice", service: "sudo", remote: "record", silent: true), options: options)
        XCTAssertEqual(outcome.code, .authError)
        XCTAssertEqual(talk.errors, ["Not approved: \"Not me\" on your workstation"])
    }

    func testAnAuthenticatorDownIsSaidBeforeAnyPromptEvenUnderPAMSilent() {
        let talk = RecordingConversation()
        let (outcome, _, prompt) = run(
            { _ in nil }, approval: .ended(.unreachable("connection refused")), answer: ScriptedSecret(""), talk: talk,
            silent: true)
        XCTAssertNotEqual(outcome.code, .success)
        XCTAssertEqual(prompt.asked, [])
        XCTAssertEqual(talk.errors, ["Fingerprint login unavailable: authenticator not reachable"])
    }

    func testNoDecisionInTimeWithdrawsAndSaysSo() {
        let talk = RecordingConversation()
        let (outcome, helper, _) = run({ _ in nil }, answer: ScriptedSecret(""), talk: talk)
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertTrue(helper.running[0].withdrawn)
        XCTAssertEqual(talk.errors, ["Not approved in time on your workstation"])
    }

    func testAnApprovalForAnotherTokenIsNoSuccess() {
        let (outcome, _, _) = run(
            { _ in .accepted(jti: "AAAAAAAAAAAAAAAAAAAAAA", kid: "k", finger: "remote:x") }, answer: ScriptedSecret(""))
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
    }

    func testAHelperThatCouldNotAskEndsBeforeAnyPrompt() {
        let talk = RecordingConversation()
        let (outcome, _, prompt) = run(
            { _ in nil }, approval: .ended(.unreachable("connection refused")), answer: ScriptedSecret(""), talk: talk)
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(prompt.asked, [])
        XCTAssertEqual(talk.errors, ["Fingerprint login unavailable: authenticator not reachable"])
    }

    func testHeldRequestsSayWhy() {
        let talk = RecordingConversation()
        let (outcome, _, _) = run(
            { _ in nil },
            approval: .ended(.refused(jti: "j", kid: "k", finger: nil, code: .approvalHeld, reason: "HTTP 429")),
            answer: ScriptedSecret(""), talk: talk)
        XCTAssertEqual(outcome.code, .authError)
        XCTAssertEqual(talk.errors.count, 1)
        XCTAssertTrue(talk.errors[0].hasPrefix("Remote approval unavailable"), talk.errors[0])
    }
}

/// Starts the scripted helper with a remote approval's first line and later verdict.
final class ScriptedStart: BackgroundLoginHelper {
    let base: ScriptedBackground
    let approval: ApprovalPrompt
    let later: ((LoginJob) -> HelperOutcome?)?
    init(_ base: ScriptedBackground, approval: ApprovalPrompt, later: ((LoginJob) -> HelperOutcome?)?) {
        self.base = base
        self.approval = approval
        self.later = later
    }
    func start(_ job: LoginJob) -> Result<RunningLogin, BackgroundStartFailure> {
        let started = base.start(job)
        if let running = base.running.last {
            running.approval = approval
            running.later = later?(job)
        }
        return started
    }
}

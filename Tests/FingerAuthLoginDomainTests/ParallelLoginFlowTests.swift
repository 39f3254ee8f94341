import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// A helper started "in the background": its verdict is fixed, made from the job.
final class ScriptedBackground: BackgroundLoginHelper {
    var verdict: (LoginJob) -> HelperOutcome?
    var startFailure: HelperOutcome?
    var jobs: [LoginJob] = []
    var running: [ScriptedRunning] = []
    init(verdict: @escaping (LoginJob) -> HelperOutcome?) { self.verdict = verdict }
    func start(_ job: LoginJob) -> Result<RunningLogin, BackgroundStartFailure> {
        jobs.append(job)
        if let startFailure { return .failure(BackgroundStartFailure(startFailure)) }
        let r = ScriptedRunning(verdict(job))
        running.append(r)
        return .success(r)
    }
}

final class ScriptedRunning: RunningLogin {
    let verdict: HelperOutcome?
    var stopped = false
    /// A remote approval's first line, and the verdict that comes while the module waits.
    var approval = ApprovalPrompt.asked(code: "47", workstations: "ws-alice")
    var later: HelperOutcome?
    var withdrawn = false
    var waitedMilliseconds: Int64?
    init(_ verdict: HelperOutcome?) { self.verdict = verdict }
    func verdictNow() -> HelperOutcome? { verdict }
    func verdict(untilMilliseconds milliseconds: Int64) -> HelperOutcome? {
        waitedMilliseconds = milliseconds
        return verdict ?? later
    }
    func approvalPrompt(untilMilliseconds milliseconds: Int64) -> ApprovalPrompt { approval }
    func withdraw() { withdrawn = true }
    func stop() { stopped = true }
}

final class ScriptedSecret: SecretAnswer {
    let text: String
    var handedOn = false
    init(_ text: String) { self.text = text }
    var isEmpty: Bool { text.isEmpty }
    func handToNextModule() -> Bool {
        handedOn = true
        return true
    }
}

final class ScriptedPrompt: SecretPrompt {
    var answer: ScriptedSecret?
    var asked: [String] = []
    init(_ answer: ScriptedSecret?) { self.answer = answer }
    func askSecret(_ text: String) -> SecretAnswer? {
        asked.append(text)
        return answer
    }
}

final class ParallelLoginFlowTests: XCTestCase {
    let terminal = TerminalTarget(path: "/dev/pts/7", device: 34823)

    func run(
        _ verdict: @escaping (LoginJob) -> HelperOutcome?, answer: ScriptedSecret?,
        talk: RecordingConversation = RecordingConversation(), store: EnrollmentStore = FakeStore()
    )
        -> (LoginOutcome, ScriptedBackground, ScriptedPrompt)
    {
        let login = testFlow(
            helper: ScriptedHelper.accepting(), store: store, conversation: talk, random: FixedRandom(),
            users: KnownUsers(), ledger: FakeLedger(), hostName: "h")
        let helper = ScriptedBackground(verdict: verdict)
        let prompt = ScriptedPrompt(answer)
        let flow = ParallelLoginFlow(login: login, helper: helper, prompt: prompt, terminal: terminal)
        return (flow.authenticate(LoginRequest(user: "alice", service: "sudo"), options: testOptions()), helper, prompt)
    }

    func testFingerWinsSucceedsAndTheTypedTextIsNeitherUsedNorHandedOn() {
        let secret = ScriptedSecret("half-typ")
        let (outcome, helper, prompt) = run(
            { .accepted(jti: $0.jti, kid: "k", finger: "right-index-finger") }, answer: secret)
        XCTAssertEqual(outcome.code, .success)
        XCTAssertFalse(secret.handedOn)
        XCTAssertEqual(prompt.asked, ["Password or place your finger: "])
        XCTAssertEqual(helper.jobs[0].terminal, terminal)
        XCTAssertTrue(helper.jobs[0].text.contains("terminal=/dev/pts/7\nterminal_device=34823\n"))
        XCTAssertFalse(helper.jobs[0].text.contains("half-typ"))
    }

    func testAcceptanceOfAnotherTokenIsNotASuccess() {
        let (outcome, _, _) = run(
            { _ in .accepted(jti: "AAAAAAAAAAAAAAAAAAAAAA", kid: "k", finger: "f") }, answer: ScriptedSecret(""))
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
    }

    func testPasswordWinsStopsTheHelperAndHandsThePasswordOn() {
        let secret = ScriptedSecret("the-password")
        let (outcome, helper, _) = run({ _ in nil }, answer: secret)
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertTrue(secret.handedOn)
        XCTAssertTrue(helper.running[0].stopped)
        XCTAssertFalse(outcome.reason.contains("the-password"))
        XCTAssertTrue(outcome.reason.hasPrefix("password typed at the parallel prompt"), outcome.reason)
    }

    func testEmptyLineStopsTheHelperAndHandsNothingOn() {
        let secret = ScriptedSecret("")
        let (outcome, helper, _) = run({ _ in nil }, answer: secret)
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertFalse(secret.handedOn)
        XCTAssertTrue(helper.running[0].stopped)
    }

    func testAPasswordAfterThreeWrongFingersIsHandedOn() {
        let secret = ScriptedSecret("pw")
        let (outcome, _, _) = run({ _ in .tooManyTries }, answer: secret)
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertTrue(secret.handedOn)
        XCTAssertTrue(outcome.reason.contains("too many tries"), outcome.reason)
    }

    func testARefusalIsNeverASuccess() {
        let secret = ScriptedSecret("")
        let (outcome, _, _) = run(
            { .refused(jti: $0.jti, kid: "k", finger: "f", code: .invalidToken, reason: "401") }, answer: secret)
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
    }

    func testAFailedConversationIsAConversationError() {
        let (outcome, helper, _) = run({ _ in nil }, answer: nil)
        XCTAssertEqual(outcome.code, .conversationError)
        XCTAssertTrue(helper.running[0].stopped)
    }

    func testNotEnrolledAsksNothing() {
        let (outcome, helper, prompt) = run(
            { _ in nil }, answer: ScriptedSecret("x"), store: FakeStore(state: .notEnrolled))
        XCTAssertEqual(outcome.code, .ignore)
        XCTAssertEqual(prompt.asked, [])
        XCTAssertEqual(helper.jobs, [])
    }

    func testAHelperThatCannotStartAsksNothingAndFallsThrough() {
        let talk = RecordingConversation()
        let login = testFlow(
            helper: ScriptedHelper.accepting(), store: FakeStore(), conversation: talk, random: FixedRandom(),
            users: KnownUsers(), ledger: FakeLedger(), hostName: "h")
        let helper = ScriptedBackground(verdict: { _ in nil })
        helper.startFailure = .unavailable("login helper not found")
        let prompt = ScriptedPrompt(ScriptedSecret("x"))
        let outcome = ParallelLoginFlow(login: login, helper: helper, prompt: prompt, terminal: terminal)
            .authenticate(LoginRequest(user: "alice", service: "sudo"), options: testOptions())
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(prompt.asked, [])
        XCTAssertEqual(talk.errors, [LoginTexts.readerUnavailable])
    }

    func testPromptOptionAndTerminalParsing() throws {
        var o = testOptions()
        XCTAssertEqual(o.prompt, .sequential)
        try o.set("prompt", "parallel", source: "t")
        XCTAssertEqual(o.prompt, .parallel)
        XCTAssertThrowsError(try o.set("prompt", "both", source: "t"))
        XCTAssertEqual(TerminalTarget.devicePath(fromPAMTTY: "pts/3"), "/dev/pts/3")
        XCTAssertEqual(TerminalTarget.devicePath(fromPAMTTY: "/dev/tty2"), "/dev/tty2")
        for bad in [":0", "ssh", "/dev/pts/../sda", "/dev/ptmx", "/etc/passwd", "pts/", "/dev/pts/1x", "tty"] {
            XCTAssertNil(TerminalTarget.devicePath(fromPAMTTY: bad), bad)
        }
        let job = LoginJob(
            user: "alice", service: "sudo", jti: Base64URL.encode([UInt8](repeating: 1, count: 16)),
            issuer: "h", options: testOptions(), terminal: terminal)
        XCTAssertEqual(try LoginJob.parse(job.text).terminal, terminal)
        XCTAssertThrowsError(try LoginJob.parse(job.text.replacingTerminal("terminal=/etc/shadow")))
        XCTAssertThrowsError(try LoginJob.parse(job.text.replacingTerminal("")))
    }
}

private extension String {
    /// The request with its `terminal=` line replaced by `line` (removed when empty).
    func replacingTerminal(_ line: String) -> String {
        split(separator: "\n").map { $0.hasPrefix("terminal=") ? line : String($0) }.filter { !$0.isEmpty }.joined(
            separator: "\n") + "\n"
    }
}

/// A stand-in for gettext: one German text.
struct GermanTexts: Translator {
    func translate(_ msgid: String) -> String {
        msgid == TextName.placeFinger.english ? "Legen Sie Ihren Finger auf den Fingerabdruckleser" : msgid
    }
}

final class PromptTextsTests: XCTestCase {
    func testTheAdminsWordsThenTheTranslationThenEnglish() throws {
        var o = testOptions()
        XCTAssertEqual(
            PromptTexts(options: o, service: "sudo", translate: GermanTexts().translate).text(.placeFinger),
            "Legen Sie Ihren Finger auf den Fingerabdruckleser")
        XCTAssertEqual(
            PromptTexts(options: o, service: "sudo").text(.noMatch, left: 2),
            "No match, try again (2 left)")
        try o.set("text.place_finger", "Place your finger to authorize {service}", source: "t")
        XCTAssertEqual(
            PromptTexts(options: o, service: "sudo", translate: GermanTexts().translate).text(.placeFinger),
            "Place your finger to authorize sudo")
        try o.set("text.place_finger.login", "Finger, please", source: "t")
        XCTAssertEqual(
            PromptTexts(options: o, service: "login", translate: GermanTexts().translate).text(.placeFinger),
            "Finger, please")
        XCTAssertEqual(
            PromptTexts(options: o, service: "su", translate: GermanTexts().translate).text(.placeFinger),
            "Place your finger to authorize su")
        XCTAssertThrowsError(try o.set("text.bogus", "x", source: "t"))
        XCTAssertThrowsError(try o.set("text.place_finger.a b", "x", source: "t"))
        XCTAssertThrowsError(try o.set("text.place_finger", "", source: "t"))
    }

    func testTheSequentialFlowShowsTheChosenTexts() throws {
        var o = testOptions()
        try o.set("text.too_many_tries.sudo", "Too many, {service}", source: "t")
        let talk = RecordingConversation()
        var flow = testFlow(
            helper: ScriptedHelper([.ready(reader: "v"), .noMatch(triesLeft: 1)], fixed: .tooManyTries),
            store: FakeStore(),
            conversation: talk, random: FixedRandom(), users: KnownUsers(), ledger: FakeLedger(), hostName: "h")
        flow.translate = GermanTexts().translate
        _ = flow.authenticate(LoginRequest(user: "alice", service: "sudo"), options: o)
        XCTAssertEqual(
            talk.infos, ["Legen Sie Ihren Finger auf den Fingerabdruckleser", "No match, try again (1 left)"])
        XCTAssertEqual(talk.errors, ["Too many, sudo"])
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// The attempt limit's rule and the login decision's use of it (a fake ledger); the file
/// ledger and the real module, agent and su are in Tests/integration and Tests/e2e.
final class AttemptLimitTests: XCTestCase {
    let minute: Int64 = 60_000

    func testFiveFailuresInARowArmThenThePauseDoublesUpToAnHour() {
        var record = AttemptRecord()
        var now: Int64 = 10_000_000
        for n in 1...5 {
            XCTAssertNil(AttemptLimit.pausedUntil(record, now: now), "attempt \(n) is armed")
            record = AttemptLimit.addingFailure(record, now: now)
            now += 1000
        }
        var expected: [Int64] = []
        var pauses: [Int64] = []
        for pause in [5, 10, 20, 40, 60, 60] {
            let last = record.lastFailure
            guard let until = AttemptLimit.pausedUntil(record, now: last + 1) else {
                return XCTFail("no pause after \(record.failures)")
            }
            pauses.append((until - last) / minute)
            expected.append(Int64(pause))
            // The pause holds until its last millisecond, then one attempt is armed.
            XCTAssertNotNil(AttemptLimit.pausedUntil(record, now: until - 1))
            XCTAssertNil(AttemptLimit.pausedUntil(record, now: until))
            record = AttemptLimit.addingFailure(record, now: until)
        }
        XCTAssertEqual(pauses, expected)
    }

    func testADayWithoutFailureForgetsAndAFutureTimeCannotEndAPause() {
        let record = AttemptRecord(failures: 7, lastFailure: 5_000_000)
        XCTAssertNotNil(AttemptLimit.pausedUntil(record, now: 5_000_000 + 19 * minute))
        XCTAssertNil(AttemptLimit.pausedUntil(record, now: 5_000_000 + 24 * 60 * minute))
        XCTAssertEqual(AttemptLimit.addingFailure(record, now: 5_000_000 + 24 * 60 * minute).failures, 1)
        // Written "in the future" (not by our clock): the pause counts from now, not from then.
        let future = AttemptRecord(failures: 5, lastFailure: Int64.max - 10)
        XCTAssertEqual(AttemptLimit.pausedUntil(future, now: 1000), 1000 + 5 * minute)
        XCTAssertEqual(
            AttemptLimit.pausedUntil(AttemptRecord(failures: AttemptLimit.maxFailures, lastFailure: 0), now: 1),
            60 * minute)
    }

    func testRecordLinesHaveOneWidthAndOnlyThatIsRead() {
        let lines = [
            AttemptRecord(), AttemptRecord(failures: 5, lastFailure: 123),
            AttemptRecord(failures: 9999, lastFailure: Int64.max),
        ]
        .map(\.line)
        XCTAssertEqual(Set(lines.map(\.utf8.count)), [AttemptRecord.lineBytes])
        XCTAssertEqual(lines[1], "fingerauth-attempts 1 0005 0000000000000000123\n")
        XCTAssertEqual(AttemptRecord(line: lines[1]), AttemptRecord(failures: 5, lastFailure: 123))
        for bad in [
            "", "fingerauth-attempts 1 5 123\n", "fingerauth-attempts 1 0005 0000000000000000123",
            "fingerauth-attempts 1 -005 0000000000000000123\n",
            "fingerauth-attempts 2 0005 0000000000000000123\n", lines[1] + lines[1],
            "fingerauth-attempts 1 0005 9999999999999999999\n",
        ] {
            XCTAssertNil(AttemptRecord(line: bad), bad)
        }
    }

    // MARK: - The login decision

    func flow(_ helper: LoginHelper, _ ledger: FakeLedger, _ talk: RecordingConversation = RecordingConversation())
        -> TestLoginFlow
    {
        testFlow(
            helper: helper, store: FakeStore(), conversation: talk, random: FixedRandom(),
            users: KnownUsers(names: ["alice", "bob"]),
            ledger: ledger, hostName: "h")
    }

    /// A helper that reports what the ledger held when the person was asked (after READY).
    final class ObservingHelper: LoginHelper {
        let ledger: FakeLedger
        let outcome: HelperOutcome
        var seenAtPrompt: Int?
        init(_ ledger: FakeLedger, _ outcome: HelperOutcome) {
            self.ledger = ledger
            self.outcome = outcome
        }
        func run(_ job: LoginJob, relay: (HelperMessage) -> Bool) -> HelperOutcome {
            guard relay(.ready(reader: "v")) else { return .conversationFailed }
            seenAtPrompt = ledger.records[job.user]?.failures
            return outcome
        }
    }

    func testTheAttemptIsCountedBeforeThePromptAndOnlyASuccessClearsIt() {
        let ledger = FakeLedger()
        let failing = ObservingHelper(ledger, .tooManyTries)
        XCTAssertEqual(
            flow(failing, ledger).authenticate(LoginRequest(user: "alice", service: "su"), options: testOptions()).code,
            .maxTries)
        XCTAssertEqual(failing.seenAtPrompt, 1, "counted before the person was asked")
        XCTAssertEqual(ledger.records["alice"]?.failures, 1)
        // A helper that ends on its own before READY (authenticator down, reader busy): the
        // reader never armed, the attempt is taken back.
        for early in [HelperOutcome.unreachable("down"), .unavailable("reader: busy"), .keyUnusable("gone")] {
            _ = flow(ScriptedHelper([], fixed: early), ledger).authenticate(
                LoginRequest(user: "alice", service: "su"), options: testOptions())
            XCTAssertEqual(ledger.records["alice"]?.failures, 1, "\(early)")
        }
        // After READY, whatever the end: counted (here the helper is stopped at the prompt).
        _ = flow(ScriptedHelper(fixed: .unavailable("no finger within 10 s")), ledger)
            .authenticate(LoginRequest(user: "alice", service: "su"), options: testOptions())
        XCTAssertEqual(ledger.records["alice"]?.failures, 2)
        XCTAssertEqual(
            flow(ScriptedHelper.accepting(), ledger).authenticate(
                LoginRequest(user: "alice", service: "su"), options: testOptions()
            ).code, .success)
        XCTAssertEqual(ledger.records["alice"], AttemptRecord())
    }

    func testPastTheLimitTheReaderIsNotArmedAndThePersonIsToldWhy() {
        let ledger = FakeLedger()
        ledger.records["alice"] = AttemptRecord(failures: 5, lastFailure: ledger.now - 1000)
        let talk = RecordingConversation()
        let helper = ScriptedHelper.accepting()
        let outcome = flow(helper, ledger, talk).authenticate(
            LoginRequest(user: "alice", service: "su"), options: testOptions())
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(outcome.reason, "5 failed fingerprint attempts in a row; reader not armed for another 299 s")
        XCTAssertEqual(outcome.category, .tooManyAttempts)
        XCTAssertEqual(talk.errors, [LoginTexts.tooManyAttempts])
        XCTAssertTrue(helper.jobs.isEmpty, "the helper was never started")
        // Another user is not held back by alice's record.
        XCTAssertEqual(
            flow(ScriptedHelper.accepting(), ledger).authenticate(
                LoginRequest(user: "bob", service: "su"), options: testOptions()
            ).code,
            .success)
    }

    func testARecordThatCannotBeReadOrWrittenMeansNoReader() {
        let ledger = FakeLedger()
        ledger.failing = "/run/fingerauth/attempts/alice: No space left on device"
        let helper = ScriptedHelper.accepting()
        let talk = RecordingConversation()
        let outcome = flow(helper, ledger, talk).authenticate(
            LoginRequest(user: "alice", service: "su"), options: testOptions())
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(
            outcome.reason, "attempt record: /run/fingerauth/attempts/alice: No space left on device; reader not armed")
        XCTAssertEqual(talk.errors, [LoginTexts.readerUnavailable])
        XCTAssertTrue(helper.jobs.isEmpty)
    }

    func testACountThatCannotBeWrittenKeepsTheHelperFromStarting() {
        /// Fails from the second update on: the check passes, the count does not.
        final class FailingLater: AttemptLedger {
            var calls = 0
            func nowMilliseconds() -> Int64 { 1 }
            func update(_ user: String, _ change: (inout AttemptRecord) -> Void) -> Result<
                AttemptEntry, AttemptLedgerError
            > {
                calls += 1
                return calls == 1
                    ? .success(AttemptEntry(record: AttemptRecord())) : .failure(AttemptLedgerError("disk gone"))
            }
        }
        let talk = RecordingConversation()
        let helper = ScriptedHelper.accepting()
        let flow = testFlow(
            helper: helper, store: FakeStore(), conversation: talk, random: FixedRandom(),
            users: KnownUsers(), ledger: FailingLater(), hostName: "h")
        let outcome = flow.authenticate(LoginRequest(user: "alice", service: "su"), options: testOptions())
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(outcome.reason, "attempt record: disk gone; reader not armed")
        XCTAssertEqual(talk.infos, [], "nobody was asked for a finger")
        XCTAssertTrue(helper.jobs.isEmpty, "the helper never started")
    }

    func testCustomTextsDoNotChangeWhatCounts() {
        var options = testOptions()
        options.texts["place_finger"] = "Touch it"
        options.texts["place_finger.swaylock"] = "Touch it, locker"
        let ledger = FakeLedger()
        let talk = RecordingConversation()
        let request = LoginRequest(user: "alice", service: AgentProtocol.serviceClaim, clientService: "swaylock")
        let helper = ScriptedHelper(fixed: .tooManyTries)
        XCTAssertEqual(flow(helper, ledger, talk).authenticate(request, options: options).code, .maxTries)
        XCTAssertEqual(talk.infos, ["Touch it, locker"])
        XCTAssertEqual(ledger.records["alice"]?.failures, 1)
        // The token's service is the agent's name; the client's word travels apart.
        XCTAssertEqual(helper.jobs[0].service, "fingerauth-agent")
        XCTAssertEqual(helper.jobs[0].clientService, "swaylock")
        XCTAssertEqual(try LoginJob.parse(helper.jobs[0].text).clientService, "swaylock")
        XCTAssertTrue(helper.jobs[0].text.contains("\nclient_service=swaylock\n"))
    }

    func testTheParallelPromptCountsBeforeItAsksAndTakesBackWhenNoFingerWasTried() {
        let ledger = FakeLedger()
        func run(_ verdict: HelperOutcome?, _ answer: ScriptedSecret?) -> LoginOutcome {
            let login = flow(ScriptedHelper.accepting(), ledger)
            return ParallelLoginFlow(
                login: login, helper: ScriptedBackground(verdict: { _ in verdict }), prompt: ScriptedPrompt(answer),
                terminal: TerminalTarget(path: "/dev/pts/7", device: 34823)
            )
            .authenticate(LoginRequest(user: "alice", service: "su"), options: testOptions())
        }
        _ = run(nil, ScriptedSecret("a password"))
        XCTAssertEqual(ledger.records["alice"]?.failures ?? 0, 0, "the password, no finger: not a failed attempt")
        _ = run(nil, ScriptedSecret(""))
        XCTAssertEqual(ledger.records["alice"]?.failures, 1, "an empty answer with the reader armed counts")
        _ = run(.tooManyTries, ScriptedSecret("a password"))
        XCTAssertEqual(ledger.records["alice"]?.failures, 2, "wrong fingers count, whatever was typed")
        _ = run(nil, nil)
        XCTAssertEqual(ledger.records["alice"]?.failures, 3, "a prompt that failed counts")
        _ = run(.unreachable("down"), ScriptedSecret(""))
        XCTAssertEqual(ledger.records["alice"]?.failures, 3, "the reader never armed")
        XCTAssertEqual(run(nil, ScriptedSecret("")).code, .authInfoUnavailable)
        XCTAssertEqual(ledger.records["alice"]?.failures, 4)
        let accepted = ParallelLoginFlow(
            login: flow(ScriptedHelper.accepting(), ledger),
            helper: ScriptedBackground(verdict: { .accepted(jti: $0.jti, kid: "k", finger: "f") }),
            prompt: ScriptedPrompt(ScriptedSecret("")), terminal: TerminalTarget(path: "/dev/pts/7", device: 34823)
        )
        .authenticate(LoginRequest(user: "alice", service: "su"), options: testOptions())
        XCTAssertEqual(accepted.code, .success)
        XCTAssertEqual(ledger.records["alice"], AttemptRecord())
    }

    // MARK: - The agent's turns

    func testAUidThatJustHadTheReaderYieldsToOneThatWaitsForAtMostTenSeconds() {
        var turns = ReaderTurns()
        let alice: UInt32 = 5001
        let bob: UInt32 = 5002
        XCTAssertFalse(turns.mustYield(alice, running: false, now: 0), "nobody waits")
        turns.toldBusy(bob, at: 100)
        XCTAssertTrue(turns.mustYield(alice, running: true, now: 150), "alice's request may still hold the reader")
        turns.heldEnded(alice, at: 200)
        XCTAssertTrue(turns.mustYield(alice, running: false, now: 300))
        XCTAssertFalse(turns.mustYield(bob, running: false, now: 300), "bob's turn")
        XCTAssertFalse(
            turns.mustYield(alice, running: false, now: 200 + ReaderTurns.turnMilliseconds), "alice yields 10 s at most"
        )
        // Bob had his turn; alice, told busy meanwhile, goes next.
        turns.toldBusy(alice, at: 400)
        turns.heldEnded(bob, at: 500)
        XCTAssertTrue(turns.mustYield(bob, running: false, now: 600))
        XCTAssertFalse(turns.mustYield(alice, running: false, now: 600))
        // A wait is remembered for 30 s.
        XCTAssertFalse(turns.mustYield(bob, running: true, now: 400 + ReaderTurns.waitingMilliseconds))
    }

    func testTheClientHearsOnlyACategory() {
        let ledger = FakeLedger()
        let outcomes: [(HelperOutcome, OutcomeCategory)] = [
            (.unreachable("curl: (7) Failed to connect to /etc/secret"), .authenticatorUnavailable),
            (.unavailable("reader: busy"), .readerUnavailable),
            (.tooManyTries, .noMatch),
            (.keyUnusable("/var/lib/fingerauth/users/alice/device.key: mode 644"), .readerUnavailable),
        ]
        for (helperOutcome, category) in outcomes {
            let outcome = flow(ScriptedHelper([], fixed: helperOutcome), ledger).authenticate(
                LoginRequest(user: "alice", service: "s", silent: true),
                options: testOptions())
            XCTAssertEqual(outcome.category, category, "\(helperOutcome)")
            let line = AgentReply.result(AgentResult(code: outcome.code, reason: outcome.category.rawValue)).line
            XCTAssertFalse(line.contains("/"), line)
        }
        XCTAssertEqual(
            flow(ScriptedHelper.accepting(), ledger).authenticate(
                LoginRequest(user: "alice", service: "s"), options: testOptions()
            ).category,
            .accepted)
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

final class LoginFlowTests: XCTestCase {
    var ledger = FakeLedger()

    func flow(
        helper: LoginHelper = ScriptedHelper.accepting(), store: EnrollmentStore = FakeStore(),
        conversation: RecordingConversation = RecordingConversation(), random: RandomSource = FixedRandom()
    ) -> TestLoginFlow {
        testFlow(
            helper: helper, store: store, conversation: conversation, random: random, users: KnownUsers(),
            ledger: ledger,
            hostName: "fallback-host")
    }

    func testAcceptedVerdictForOurJTISucceedsAndTheJobCarriesTheFacts() {
        let talk = RecordingConversation()
        let helper = ScriptedHelper.accepting()
        let outcome = flow(helper: helper, conversation: talk).authenticate(
            LoginRequest(user: "alice", service: "sudo"), options: testOptions())
        XCTAssertEqual(outcome.code, .success)
        XCTAssertEqual(outcome.kid, "kid-1")
        XCTAssertEqual(outcome.finger, "right-index-finger")
        XCTAssertEqual(talk.infos, [LoginTexts.placeFinger])
        XCTAssertEqual(talk.errors, [])
        let job = helper.jobs[0]
        XCTAssertEqual(job.user, "alice")
        XCTAssertEqual(job.service, "sudo")
        XCTAssertEqual(job.issuer, "host-1")
        XCTAssertEqual(job.jti, Base64URL.encode([UInt8](repeating: 7, count: 16)))
        XCTAssertEqual(outcome.jti, job.jti)
        XCTAssertEqual(try LoginJob.parse(job.text).text, job.text)
    }

    func testTheHelpersStepsAreTimedForTheLogLine() {
        let steps: [HelperMessage] = [
            .ready(reader: "virtual"), .match(finger: "right-index-finger"), .accepted(jti: "j", kid: "kid-1"),
        ]
        let helper = ScriptedHelper(
            steps, outcome: { .accepted(jti: $0.jti, kid: "kid-1", finger: "right-index-finger") })
        var timed = flow(helper: helper)
        let clock = SteppingClock(readings: [100, 121, 146, 155])
        timed.clock = { clock.nowMilliseconds() }
        let outcome = timed.authenticate(LoginRequest(user: "alice", service: "sudo"), options: testOptions())
        XCTAssertEqual(outcome.code, .success)
        XCTAssertEqual(outcome.stages, LoginStages(ready: 21, match: 46, verdict: 55))
        XCTAssertEqual(outcome.stages?.logFields, " ready_ms=21 match_ms=25 answer_ms=9")
        XCTAssertNil(flow().authenticate(LoginRequest(user: "alice", service: "sudo"), options: testOptions()).stages)
        XCTAssertEqual(LoginStages(ready: 30).logFields, " ready_ms=30")
        XCTAssertEqual(LoginStages().logFields, "")
    }

    func testIssuerFallsBackToTheHostName() {
        var options = testOptions()
        options.hostID = nil
        let helper = ScriptedHelper.accepting()
        _ = flow(helper: helper).authenticate(LoginRequest(user: "alice", service: "sudo"), options: options)
        XCTAssertEqual(helper.jobs[0].issuer, "fallback-host")
    }

    func testAnOfflineLoginForOurJTISucceedsAndSaysSoEvenWhenSilent() {
        let talk = RecordingConversation()
        let helper = ScriptedHelper(outcome: {
            .acceptedOffline(
                jti: $0.jti, kid: "kid-1", finger: "right-index-finger", grant: "g1", expires: 1_796_565_600,
                cause: "refused")
        })
        let outcome = flow(helper: helper, conversation: talk).authenticate(
            LoginRequest(user: "alice", service: "sudo", silent: true), options: testOptions())
        XCTAssertEqual(outcome.code, .success)
        XCTAssertEqual(outcome.category, .accepted)
        XCTAssertEqual(
            outcome.reason,
            "finger right-index-finger matched, authenticator unreachable (refused): offline grant g1, expires 2026-12-06 14:00 UTC"
        )
        XCTAssertEqual(
            talk.infos,
            [
                LoginTexts.placeFinger,
                "Authenticator not reachable: logged in offline with this host's offline grant (expires 2026-12-06 14:00 UTC)",
            ])
        let other = ScriptedHelper(outcome: { _ in
            .acceptedOffline(
                jti: "AAAAAAAAAAAAAAAAAAAAAA", kid: "k", finger: "f", grant: "g", expires: 5, cause: "timeout")
        })
        let refused = flow(helper: other).authenticate(
            LoginRequest(user: "alice", service: "s"), options: testOptions())
        XCTAssertEqual(refused.code, .authInfoUnavailable)
        XCTAssertEqual(refused.reason, "login helper answered for another token")
    }

    func testAcceptanceOfAnotherTokenIsNotASuccess() {
        let helper = ScriptedHelper(outcome: { _ in .accepted(jti: "AAAAAAAAAAAAAAAAAAAAAA", kid: "k", finger: "f") })
        let outcome = flow(helper: helper).authenticate(
            LoginRequest(user: "alice", service: "s"), options: testOptions())
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(outcome.reason, "login helper answered for another token")
    }

    func testEveryNonSuccessPathHasItsCodeAndText() {
        let r = LoginRequest(user: "alice", service: "s")
        let cases: [(String, TestLoginFlow, LoginRequest, PAMCode, [String])] = [
            ("bad name", flow(), LoginRequest(user: "../etc", service: "s"), .userUnknown, []),
            ("unknown user", flow(), LoginRequest(user: "bob", service: "s"), .userUnknown, []),
            ("remote", flow(), LoginRequest(user: "alice", service: "sshd", remote: "PAM_RHOST 10.0.0.1"), .ignore, []),
            ("not enrolled", flow(store: FakeStore(state: .notEnrolled)), r, .ignore, []),
            (
                "unsafe state", flow(store: FakeStore(state: .unsafe("mode 777"))), r, .authInfoUnavailable,
                [LoginTexts.readerUnavailable]
            ),
            (
                "key unusable", flow(helper: ScriptedHelper([], fixed: .keyUnusable("x"))), r, .authInfoUnavailable,
                [LoginTexts.readerUnavailable]
            ),
            (
                "max tries", flow(helper: ScriptedHelper(fixed: .tooManyTries)), r, .maxTries,
                [LoginTexts.tooManyTries]
            ),
            (
                "no reader", flow(helper: ScriptedHelper([], fixed: .unavailable("no reader"))), r,
                .authInfoUnavailable, [LoginTexts.readerUnavailable]
            ),
            ("no randomness", flow(random: FixedRandom(fails: true)), r, .systemError, []),
            (
                "unreachable", flow(helper: ScriptedHelper([], fixed: .unreachable("refused"))), r,
                .authInfoUnavailable,
                [LoginTexts.authenticatorUnavailable]
            ),
            (
                "refused",
                flow(
                    helper: ScriptedHelper(outcome: {
                        .refused(jti: $0.jti, kid: "k", finger: "f", code: .invalidToken, reason: "401")
                    })), r,
                .authError, [LoginTexts.refused]
            ),
            (
                "5xx",
                flow(
                    helper: ScriptedHelper(outcome: {
                        .authenticatorUnavailable(jti: $0.jti, kid: "k", finger: "f", reason: "500")
                    })), r,
                .authInfoUnavailable, [LoginTexts.authenticatorUnavailable]
            ),
            ("conversation", flow(helper: ScriptedHelper(fixed: .conversationFailed)), r, .conversationError, []),
        ]
        for (name, f, request, expected, texts) in cases {
            let talk = f.conversation.base as? RecordingConversation
            XCTAssertEqual(f.authenticate(request, options: testOptions()).code, expected, name)
            XCTAssertEqual(talk?.errors, texts, name)
        }
    }

    /// The text the person sees follows the refusal's code alone: a reason worded like a
    /// policy refusal (as another authenticator might word anything) with another code is a
    /// plain refusal, and a policy refusal is one whatever its reason says.
    func testTheRefusalCodeChoosesTheText() {
        let r = LoginRequest(user: "alice", service: "s")
        let cases: [(RefusalCode, String, String, OutcomeCategory)] = [
            (
                .policyDenied, "authenticator refused (403: policy_denied, rule 2)", LoginTexts.policyDenied,
                .policyDenied
            ),
            (.policyDenied, "anything at all", LoginTexts.policyDenied, .policyDenied),
            (.invalidToken, "authenticator refused (403: policy_denied", LoginTexts.refused, .refused),
            (.refused, "authenticator refused (403: policy_denied_soon)", LoginTexts.refused, .refused),
            (.revoked, "authenticator refused (401: key_revoked)", LoginTexts.refused, .refused),
            (
                .hardwareKeyRequired, "authenticator refused (403: hardware_key_required)", LoginTexts.refused,
                .refused
            ),
        ]
        for (code, reason, text, category) in cases {
            ledger = FakeLedger() // each case its own first attempt
            let talk = RecordingConversation()
            let helper = ScriptedHelper(outcome: {
                .refused(jti: $0.jti, kid: "k", finger: "f", code: code, reason: reason)
            })
            let outcome = flow(helper: helper, conversation: talk).authenticate(r, options: testOptions())
            XCTAssertEqual(outcome.code, .authError, reason)
            XCTAssertEqual(outcome.reason, reason)
            XCTAssertEqual(talk.errors, [text], "\(code) \(reason)")
            XCTAssertEqual(outcome.category, category, reason)
        }
    }

    func testRemoteSessionRunsWithRemoteAllow() {
        var options = testOptions()
        options.allowRemote = true
        let outcome = flow().authenticate(
            LoginRequest(user: "alice", service: "sshd", remote: "PAM_RHOST 10.0.0.1"), options: options)
        XCTAssertEqual(outcome.code, .success)
    }

    func testRemoteIsSkippedBeforeTheHelperRuns() {
        let helper = ScriptedHelper.accepting()
        let outcome = flow(helper: helper).authenticate(
            LoginRequest(user: "alice", service: "sudo", remote: "utmp: pts/1 from 10.0.0.1"),
            options: testOptions())
        XCTAssertEqual(outcome.code, .ignore)
        XCTAssertEqual(outcome.reason, "remote session skipped (utmp: pts/1 from 10.0.0.1)")
        XCTAssertTrue(helper.jobs.isEmpty)
    }

    func testDisabledIsIgnoredBeforeAnythingRuns() {
        var options = testOptions()
        options.disabled = true
        let helper = ScriptedHelper.accepting()
        XCTAssertEqual(
            flow(helper: helper).authenticate(LoginRequest(user: "alice", service: "s"), options: options).code, .ignore
        )
        XCTAssertTrue(helper.jobs.isEmpty)
    }

    func testConversationFailureStopsTheLogin() {
        let talk = RecordingConversation()
        talk.failing = true
        let outcome = flow(conversation: talk).authenticate(
            LoginRequest(user: "alice", service: "s"), options: testOptions())
        XCTAssertEqual(outcome.code, .conversationError)
    }

    func testNoMatchMessagesCountDown() {
        let talk = RecordingConversation()
        let helper = ScriptedHelper(
            [.ready(reader: "v"), .noMatch(triesLeft: 2), .noMatch(triesLeft: 1), .noMatch(triesLeft: 0)],
            fixed: .tooManyTries)
        _ = flow(helper: helper, conversation: talk).authenticate(
            LoginRequest(user: "alice", service: "s"), options: testOptions())
        XCTAssertEqual(
            talk.infos, [LoginTexts.placeFinger, "No match, try again (2 left)", "No match, try again (1 left)"])
        XCTAssertEqual(talk.errors, [LoginTexts.tooManyTries])
    }

    func testSilentKeepsTheScanPromptsAndDropsTheExplanations() {
        let talk = RecordingConversation()
        _ = flow(helper: ScriptedHelper(fixed: .tooManyTries), conversation: talk)
            .authenticate(LoginRequest(user: "alice", service: "s", silent: true), options: testOptions())
        XCTAssertEqual(talk.infos, [LoginTexts.placeFinger])
        XCTAssertEqual(talk.errors, [])
    }

    func testAServiceNameWithSpacesTravelsAsOneWord() {
        let helper = ScriptedHelper.accepting()
        _ = flow(helper: helper).authenticate(
            LoginRequest(user: "alice", service: "my service\n"), options: testOptions())
        XCTAssertEqual(helper.jobs[0].service, "my_service_")
    }
}

final class LoginJobTests: XCTestCase {
    func job() -> LoginJob {
        var o = testOptions()
        o.caFile = "/etc/ca.pem"
        o.extraClaims = [("team", "ops")]
        o.virtualReader = "/run/v.sock"
        return LoginJob(
            user: "alice", service: "sudo", jti: Base64URL.encode([UInt8](repeating: 1, count: 16)),
            issuer: "host-1", options: o)
    }

    func testRoundTrip() throws {
        XCTAssertEqual(try LoginJob.parse(job().text).text, job().text)
        XCTAssertEqual(try LoginJob.parse(job().text).options.extraClaims.map { $0.0 + "=" + $0.1 }, ["team=ops"])
    }

    func testRefusesWhatTheModuleNeverSends() {
        let base = job().text
        let bad = [
            base + "login_helper=/tmp/evil\n",
            base + "debug_file=/tmp/x\n",
            base + "user=bob\n",
            base.replacingOccurrences(of: "user=alice", with: "user=../x"),
            base.replacingOccurrences(of: "jti=", with: "jti=short"),
            base + "url=http://10.0.0.1/v1/login\nallow_http=yes\n",
            String(repeating: "x", count: LoginJob.maxBytes + 1),
            "user=alice\n",
        ]
        for text in bad { XCTAssertThrowsError(try LoginJob.parse(text), text.prefix(80).description) }
    }

    func testHTTPOnlyToALoopbackPortBelow1024() {
        var o = Options()
        o.allowHTTP = true
        for (url, ok) in [
            ("http://127.0.0.1:443/v1/login", true), ("http://127.0.0.1/v1/login", true),
            ("http://127.0.0.1:8080/v1/login", false), ("http://10.0.0.1:80/x", false),
        ] {
            o.url = try? AuthenticatorURL.parse(url).get()
            XCTAssertEqual((try? o.validated(source: "t")) != nil, ok, url)
        }
    }

    func testSameBytesIsNotCanonicalEquivalence() {
        XCTAssertTrue("\u{212A}ate" == "Kate")
        XCTAssertFalse(sameBytes("\u{212A}ate", "Kate"))
        XCTAssertTrue(sameBytes("Kate", "Kate"))
    }
}

/// A clock that reads the given values in turn, then the last one again.
///
/// `@unchecked Sendable`: used by one test at a time, on one thread.
final class SteppingClock: MonotonicTime, @unchecked Sendable {
    private var readings: [Int64]
    init(readings: [Int64]) { self.readings = readings }
    func nowMilliseconds() -> Int64 { readings.count > 1 ? readings.removeFirst() : readings.first ?? 0 }
}

import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// The login helper's flow, each of its exits with scripted parts: the lines the module
/// reads and the exit status the module waits for.
final class HelperLoginFlowTests: XCTestCase {
    static let jti = "AAAAAAAAAAAAAAAAAAAAAA"

    // XCTest makes a new instance for each test: each test has parts of its own.
    let journal = Journal()
    let clock = FakeHelperClock()
    lazy var readers = FakeReaderSide(journal: journal, clock: clock)
    lazy var keys = FakeKeySource(journal: journal, result: .success(FakeDeviceKey(journal: journal)))
    lazy var channel = FakeChannel(journal: journal, clock: clock)
    lazy var book = FakeBook(journal: journal)
    lazy var background = FakeBackground(journal: journal)
    lazy var output = FakeOutput(journal: journal)
    var job: LoginJob = {
        var options = Options()
        options.url = try? AuthenticatorURL.parse("https://auth.example/v1/login").get()
        return LoginJob(user: "alice", service: "sudo", jti: jti, issuer: "host-1", options: options)
    }()

    typealias Flow = HelperLoginFlow<
        FakeReaderSide, FakeKeySource, FakeChannel, FakeBook, FakeHelperClock, FakeBackground, FakeOutput
    >

    /// Runs the flow from the helper's start at monotonic 0; the flow, for its session.
    @discardableResult
    func run(_ expected: HelperExit, file: StaticString = #filePath, line: UInt = #line) -> Flow {
        let flow = Flow(
            job: job, readers: readers, keys: keys, channel: channel, book: book, clock: clock,
            background: background, output: output)
        XCTAssertEqual(flow.run(startedAt: 0), expected, file: file, line: line)
        return flow
    }

    func answer(_ status: Int, _ json: String) -> Result<AuthenticatorAnswer, AuthenticatorFailure> {
        .success(AuthenticatorAnswer(status: status, body: Array(json.utf8)))
    }

    func yes(jti: String = jti, sub: String = "alice", extra: String = "") -> Result<
        AuthenticatorAnswer, AuthenticatorFailure
    > {
        answer(200, #"{"ok":true,"sub":""# + sub + #"","jti":""# + jti + #"","kid":"kid-1""# + extra + "}")
    }

    let refused = AuthenticatorFailure(
        kind: .refused, message: "cannot connect to the authenticator: auth.example port 443 refused the connection")

    // MARK: matched and accepted

    func testAMatchTheAuthenticatorAcceptsEndsAtOnceWithExitZero() {
        channel.post = yes()
        let flow = run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(
            output.lines, ["READY virtual", "MATCH right-index-finger", "ACCEPTED \(Self.jti) kid-1"])
        XCTAssertNil(flow.session.key, "the key is released before the process ends")
        XCTAssertEqual(readers.opened?.closed, 1)
    }

    func testTheReaderIsClosedBeforeTheTokenIsSentAndTheKeyLoadedAfterTheLid() {
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(
            journal.entries,
            [
                "choose", "key", "open", "warm-up", "warmed", "sign", "READY virtual", "verify", "close",
                "MATCH right-index-finger", "post", "drop", "ACCEPTED \(Self.jti) kid-1",
            ])
    }

    func testThePostCarriesTheTokenSignedAheadAndTheStageTimes() throws {
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(channel.posts.count, 1)
        XCTAssertEqual(channel.posts.first?.url, "https://auth.example/v1/login")
        let body = try JSONParser(maxBytes: 65536, maxDepth: 8).parse(channel.posts.first?.body ?? [])
        let token = try XCTUnwrap(body["jwt"]?.stringValue)
        XCTAssertTrue(token.hasSuffix("." + Base64URL.encode([1, 2, 3])), token)
        XCTAssertEqual(
            JSONEncoding.encode(try XCTUnwrap(body["stages"])), #"{"ready_ms":12,"match_ms":640,"connect_ms":3}"#)
        XCTAssertEqual(journal.entries.filter { $0 == "sign" }.count, 1, "signed once, ahead")
    }

    func testTheWarmUpIsAGetOfTheLoginURLUnderItsOwnBound() {
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(channel.warmUps.map(\.url), ["https://auth.example/v1/login"])
        XCTAssertNil(channel.warmUps.first?.body)
        XCTAssertEqual(channel.warmUps.first?.bound, 3000)
        XCTAssertEqual(background.warmUpDeadlines, [3500], "READY waits for the warm-up 3.5 s from the start")
    }

    func testTheAnswersGrantIsKeptWithTheKeysItPins() {
        channel.post = yes(extra: #","offline_grant":"g.r.ant","grant_keys":[{"kty":"OKP"}]"#)
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(book.kept.map(\.token), ["g.r.ant"])
        XCTAssertNotNil(book.kept.first?.grantKeys)
        XCTAssertFalse(journal.entries.contains("drop"))
    }

    func testAGrantThatCannotBeKeptIsDropped() {
        book.keeps = false
        channel.post = yes(extra: #","offline_grant":"g.r.ant""#)
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(journal.entries.suffix(3), ["keep", "drop", "ACCEPTED \(Self.jti) kid-1"])
    }

    func testPromptParallelEndsTheModulesReadAfterTheVerdict() {
        job.terminal = TerminalTarget(path: "/dev/pts/3", device: 3)
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(journal.entries.suffix(2), ["ACCEPTED \(Self.jti) kid-1", "terminal"])
    }

    func testWithoutAThreadTheFlowWarmsUpItselfAndSignsAfterReady() {
        background.threads = false
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(
            Array(journal.entries.prefix(6)), ["choose", "key", "warm-up", "open", "READY virtual", "sign"])
        XCTAssertEqual(output.lines.last, "ACCEPTED \(Self.jti) kid-1")
    }

    func testATPMKeySignsOnlyAfterTheMatch() {
        keys.result = .success(FakeDeviceKey(journal: journal, isHardware: true))
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        let sign = journal.entries.firstIndex(of: "sign") ?? 0
        let match = journal.entries.firstIndex(of: "MATCH right-index-finger") ?? Int.max
        XCTAssertGreaterThan(sign, match)
    }

    func testRetryLinesAndNoMatchesCountDownToTheMatch() {
        readers.tries = [
            ([.retry(hint: "center your finger")], .success(.noMatch)),
            ([], .success(.match(finger: "left-thumb"))),
        ]
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(
            output.lines,
            [
                "READY virtual", "RETRY center your finger", "NOMATCH 2", "MATCH left-thumb",
                "ACCEPTED \(Self.jti) kid-1",
            ])
    }

    func testEveryTryHasTheFingersTimeoutFromReady() {
        job.options.timeoutSeconds = 10
        readers.tries = [([], .success(.noMatch)), ([], .success(.match(finger: "left-thumb")))]
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        // READY at 12 (9, and the warm-up's 3 ms): 12 + 10 000 + 1.
        XCTAssertEqual(readers.opened?.deadlines, [10_013, 10_013])
    }

    // MARK: refused

    func refusal(_ status: Int, _ json: String) {
        channel.post = answer(status, json)
        run(HelperExit(.denied, immediately: true))
        XCTAssertEqual(Array(output.lines.prefix(2)), ["READY virtual", "MATCH right-index-finger"])
        XCTAssertEqual(journal.entries.suffix(2).first, "drop", "an authoritative no ends the grant")
        XCTAssertEqual(output.terminalEnds, 0)
    }

    func testA401IsAnInvalidToken() {
        refusal(401, #"{"error":"invalid_token"}"#)
        XCTAssertEqual(
            output.lines.last, "REFUSED \(Self.jti) kid-1 invalid_token authenticator refused (401: invalid_token)")
    }

    func testA403PolicyDeniedNamesItsRule() {
        refusal(403, #"{"error":"policy_denied","rule":7}"#)
        XCTAssertEqual(
            output.lines.last,
            "REFUSED \(Self.jti) kid-1 policy_denied authenticator refused (403: policy_denied, rule 7)")
    }

    func testARevokedKeyIsRefusedAsRevoked() {
        refusal(401, #"{"error":"key_revoked"}"#)
        XCTAssertEqual(output.lines.last, "REFUSED \(Self.jti) kid-1 revoked authenticator refused (401: key_revoked)")
    }

    func testAPendingKeyIsRefusedAsPending() {
        refusal(403, #"{"error":"key_pending"}"#)
        XCTAssertEqual(output.lines.last, "REFUSED \(Self.jti) kid-1 pending authenticator refused (403: key_pending)")
    }

    func testAReplayedTokenIsRefusedAsReplayed() {
        refusal(401, #"{"error":"replayed"}"#)
        XCTAssertEqual(output.lines.last, "REFUSED \(Self.jti) kid-1 replayed authenticator refused (401: replayed)")
    }

    func testA400IsAnInvalidRequest() {
        refusal(400, #"{"error":"invalid_json"}"#)
        XCTAssertEqual(
            output.lines.last, "REFUSED \(Self.jti) kid-1 invalid_request authenticator refused (400: invalid_json)")
    }

    func testAYesNamingAnotherJTIIsNoYes() {
        channel.post = yes(jti: "BBBBBBBBBBBBBBBBBBBBBB")
        run(HelperExit(.denied, immediately: true))
        XCTAssertEqual(output.lines.last, "REFUSED \(Self.jti) kid-1 other_answer authenticator accepted another token")
    }

    func testAYesForAnotherUserIsNoYes() {
        channel.post = yes(sub: "bob")
        run(HelperExit(.denied, immediately: true))
        XCTAssertEqual(output.lines.last, "REFUSED \(Self.jti) kid-1 other_answer authenticator accepted another user")
    }

    // MARK: unavailable after the match

    func testA500AfterTheMatchIsUnavailable() {
        channel.post = answer(500, "{}")
        run(HelperExit(.denied, immediately: true))
        XCTAssertEqual(output.lines.last, "UNAVAILABLE \(Self.jti) kid-1 authenticator answered 500")
        XCTAssertFalse(journal.entries.contains("drop"), "no authoritative answer: the grant stays")
    }

    func testAPostThatGotNoAnswerIsUnavailableWithItsReason() {
        channel.post = .failure(
            .init(kind: .timeout, message: "authenticator timed out: no whole answer within 5000 ms"))
        run(HelperExit(.denied, immediately: true))
        XCTAssertEqual(
            output.lines.last, "UNAVAILABLE \(Self.jti) kid-1 authenticator timed out: no whole answer within 5000 ms")
    }

    func testASignatureThatTookTooLongSendsNothing() {
        background.endsInTime = false
        run(HelperExit(.denied))
        XCTAssertEqual(output.lines.last, "UNAVAILABLE \(Self.jti) kid-1 signing took over 2000 ms")
        XCTAssertTrue(channel.posts.isEmpty)
    }

    func testAKeyThatCannotSignSendsNothing() {
        keys.result = .success(FakeDeviceKey(journal: journal, signs: false))
        run(HelperExit(.denied, immediately: true))
        XCTAssertEqual(output.lines.last, "UNAVAILABLE \(Self.jti) kid-1 signing failed: fake key")
        XCTAssertTrue(channel.posts.isEmpty)
    }

    // MARK: unreachable before the scan: the reader is never armed

    func unreachable(_ expected: String, file: StaticString = #filePath, line: UInt = #line) {
        run(HelperExit(.failed), file: file, line: line)
        XCTAssertEqual(output.lines, ["FAIL unreachable " + expected], file: file, line: line)
        XCTAssertFalse(journal.entries.contains("verify"), "nobody is asked for a finger", file: file, line: line)
        XCTAssertEqual(readers.opened?.closed, 1, file: file, line: line)
    }

    func testRefusedWithoutAGrantIsUnreachable() {
        channel.warm = .failure(refused)
        unreachable(refused.message + " [refused]; offline: no offline grant")
    }

    func testAnExpiredGrantIsUnreachable() {
        channel.warm = .failure(refused)
        book.usable = .failure(GrantRefusal("grant expired"))
        unreachable(refused.message + " [refused]; offline: grant expired")
    }

    func testAClockBehindIsUnreachable() {
        channel.warm = .failure(refused)
        book.usable = .failure(GrantRefusal("clock behind the last time this host saw (2023-11-14 22:13:20 UTC)"))
        unreachable(
            refused.message + " [refused]; offline: clock behind the last time this host saw (2023-11-14 22:13:20 UTC)")
    }

    func testUnreadableClocksAreUnreachable() {
        channel.warm = .failure(refused)
        clock.grant = nil
        book.usable = .success((gid: "g-1", expires: 1_700_003_600))
        unreachable(refused.message + " [refused]; offline: clocks unreadable")
    }

    func testATLSFailureIsNoEvidenceAndTheGrantIsNotAsked() {
        channel.warm = .failure(.init(kind: .tls, message: "TLS failure with the authenticator: x"))
        book.usable = .success((gid: "g-1", expires: 1_700_003_600))
        unreachable(
            "TLS failure with the authenticator: x [tls]; offline: not used, no evidence the network is the problem")
        XCTAssertFalse(journal.entries.contains("grant?"))
    }

    func testAStalledProcessIsNoEvidence() {
        channel.warm = .failure(.init(kind: .stalled, message: "kept from running"))
        book.usable = .success((gid: "g-1", expires: 1_700_003_600))
        unreachable("kept from running [stalled]; offline: not used, no evidence the network is the problem")
    }

    func testNoURLIsNoEvidence() {
        job.options.url = nil
        unreachable("no url; offline: not used, no evidence the network is the problem")
        XCTAssertTrue(channel.warmUps.isEmpty)
    }

    func testNoAnswerWithinTheWarmUpBound() {
        background.answers = false
        unreachable("authenticator did not answer within 3500 ms")
    }

    // MARK: offline

    func testARefusedConnectionWithAUsableGrantLogsInOffline() {
        channel.warm = .failure(refused)
        book.usable = .success((gid: "g-1", expires: 1_700_003_600))
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(
            output.lines,
            [
                "READY virtual", "MATCH right-index-finger",
                "OFFLINE \(Self.jti) kid-1 g-1 1700003600 refused",
            ])
        XCTAssertTrue(channel.posts.isEmpty)
        XCTAssertEqual(journal.entries.filter { $0 == "sign" }.count, 1, "the record, signed after the finger")
    }

    func testA503GatewayCountsAsUnreachableAndNamesItsCause() {
        channel.warm = answer(503, "")
        book.usable = .success((gid: "g-1", expires: 1_700_003_600))
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(output.lines.last, "OFFLINE \(Self.jti) kid-1 g-1 1700003600 http-503")
    }

    func testAnOfflineLoginWhoseRecordFailsIsUnavailable() {
        channel.warm = .failure(refused)
        book.usable = .success((gid: "g-1", expires: 1_700_003_600))
        book.record = .failure(GrantRefusal("offline log: no space left"))
        run(HelperExit(.denied, immediately: true))
        XCTAssertEqual(
            output.lines.last,
            "UNAVAILABLE \(Self.jti) kid-1 authenticator unreachable; offline grant: offline log: no space left")
    }

    func testAUserWithAGrantSyncsInsteadOfTheWarmUp() {
        book.sync = (url: "https://auth.example/v1/offline/sync", body: Array("{}".utf8))
        channel.warm = answer(200, #"{"grants":[]}"#)
        channel.post = yes()
        run(HelperExit(.accepted, immediately: true))
        XCTAssertEqual(channel.warmUps.map(\.url), ["https://auth.example/v1/offline/sync"])
        XCTAssertEqual(channel.warmUps.first?.body, Array("{}".utf8))
        XCTAssertEqual(book.applied.count, 1)
        XCTAssertEqual(book.floors, [1_700_000_000], "an answer shows the clock this time")
    }

    // MARK: the reader, the key, the lid

    func testNoReaderFailsBeforeTheKeyIsLoaded() {
        readers.chooseStop = HelperStop(.noReader, "No fingerprint reader found")
        run(HelperExit(.failed))
        XCTAssertEqual(output.lines, ["FAIL no-reader No fingerprint reader found"])
        XCTAssertFalse(journal.entries.contains("key"))
    }

    func testAClosedLidFailsBeforeTheKeyIsLoaded() {
        readers.chooseStop = HelperStop(.lidClosed, "lid closed (logind); fprintd's reader counts as built in")
        run(HelperExit(.failed))
        XCTAssertEqual(output.lines, ["FAIL lid-closed lid closed (logind); fprintd's reader counts as built in"])
        XCTAssertFalse(journal.entries.contains("key"))
    }

    func testAReaderInUseFailsBeforeReady() {
        readers.openStop = HelperStop(.busy, "reader in use by fprintd")
        run(HelperExit(.failed))
        XCTAssertEqual(output.lines, ["FAIL busy reader in use by fprintd"])
    }

    func testAReaderGoneDuringTheScanFails() {
        readers.tries = [([], .failure(HelperStop(.removed, "the reader was removed")))]
        run(HelperExit(.failed))
        XCTAssertEqual(output.lines, ["READY virtual", "FAIL removed the reader was removed"])
        XCTAssertTrue(channel.posts.isEmpty)
    }

    func testNoFingerBeforeTheDeadlineTimesOut() {
        readers.tries = []
        run(HelperExit(.failed))
        XCTAssertEqual(output.lines, ["READY virtual", "FAIL timeout No finger was read before the deadline"])
    }

    func testTooManyTriesIsDenied() {
        readers.tries = Array(repeating: ([], .success(.noMatch)), count: 3)
        run(HelperExit(.denied))
        XCTAssertEqual(output.lines, ["READY virtual", "NOMATCH 2", "NOMATCH 1", "NOMATCH 0"])
        XCTAssertTrue(channel.posts.isEmpty)
    }

    func testAnUnusableKeyFailsBeforeTheReaderOpens() {
        keys.result = .failure(KeyLoadError("device key /var/lib/fingerauth/users/alice/device-key missing"))
        run(HelperExit(.failed))
        XCTAssertEqual(output.lines, ["FAIL key device key /var/lib/fingerauth/users/alice/device-key missing"])
        XCTAssertFalse(journal.entries.contains("open"))
    }
}

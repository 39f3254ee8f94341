import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// `reader`, `lid` and what the login helper reads from them: the options, the request, the
/// ACPI lid text, the USB port of a reader, fprintd's status words and the lid's outcome.
final class ReaderChoiceTests: XCTestCase {
    func testReaderAndLidAreCheckedAndTravelToTheHelper() throws {
        var options = testOptions()
        XCTAssertEqual(options.reader, .auto)
        XCTAssertEqual(options.lid, .skip)
        try options.set("reader", "fprintd", source: "t")
        try options.set("lid", "ignore", source: "t")
        try options.set("system_bus", "/tmp/bus/socket", source: "t")
        try options.set("acpi_lid_dir", "/tmp/lid", source: "t")
        try options.set("virtual_storage_reader", "/tmp/storage.sock", source: "t")
        try options.set("virtual_reader_removable", "yes", source: "t")
        for (key, bad, message) in [
            ("reader", "fprint", "must be libfprint, fprintd or auto"), ("lid", "close", "must be skip or ignore"),
            ("system_bus", "tmp/bus", "must be an absolute path"), ("acpi_lid_dir", "", "must be an absolute path"),
        ] {
            XCTAssertThrowsError(try options.set(key, bad, source: "t"), key) { error in
                XCTAssertEqual((error as? ConfigError)?.message, message, key)
            }
        }
        let job = LoginJob(user: "alice", service: "sudo", jti: "AAAAAAAAAAAAAAAAAAAAAA", issuer: "h", options: options)
        let parsed = try LoginJob.parse(job.text).options
        XCTAssertEqual(parsed.reader, .fprintd)
        XCTAssertEqual(parsed.lid, .ignore)
        XCTAssertEqual(parsed.systemBus, "/tmp/bus/socket")
        XCTAssertEqual(parsed.acpiLidDirectory, "/tmp/lid")
        XCTAssertEqual(parsed.virtualStorageReader, "/tmp/storage.sock")
        XCTAssertTrue(parsed.virtualReaderRemovable)
        var sent = options
        sent.hostID = nil // host_id stays with the module (the job's issuer)
        XCTAssertEqual(parsed, sent)
    }

    func testACPILidText() {
        XCTAssertEqual(LidState.parseACPI("state:      closed\n"), .closed)
        XCTAssertEqual(LidState.parseACPI("state:      open\n"), .open)
        XCTAssertEqual(LidState.parseACPI("state:\tclosed"), .closed)
        for text in ["", "closed", "state: closed extra", "status: closed", "state: half"] {
            XCTAssertEqual(LidState.parseACPI(text), .unknown, text)
        }
        XCTAssertEqual(LidState.combine([.closed, .unknown]), .closed)
        XCTAssertEqual(LidState.combine([.closed, .open]), .open)
        XCTAssertEqual(LidState.combine([]), .unknown)
    }

    func testTheUSBPortOfAReader() {
        XCTAssertEqual(ReaderPlacement.sysfsName(platformID: "usb:01:00:03"), "1-3")
        XCTAssertEqual(ReaderPlacement.sysfsName(platformID: "usb:02:00:01:04"), "2-1.4")
        XCTAssertEqual(ReaderPlacement.sysfsName(platformID: "usb:0a:00:0c"), "10-12")
        for bad in [
            "", "usb:01", "usb:01:00", "usb:01:01:03", "pci:01:00:03", "usb:zz:00:03", "usb:01:00:3", "usb:01:00:00",
            "usb:01:00:03/../../x",
        ] {
            XCTAssertNil(ReaderPlacement.sysfsName(platformID: bad), bad)
        }
        XCTAssertEqual(ReaderPlacement(removable: "removable\n"), .external)
        for word in ["fixed\n", "unknown\n", "", nil] as [String?] {
            XCTAssertEqual(ReaderPlacement(removable: word), .builtIn, word ?? "nil")
        }
    }

    func testFprintdStatusWords() {
        XCTAssertEqual(Fprintd.VerifyStatus("verify-match"), .match)
        XCTAssertEqual(Fprintd.VerifyStatus("verify-no-match"), .noMatch)
        XCTAssertEqual(Fprintd.VerifyStatus("verify-disconnected"), .disconnected)
        XCTAssertEqual(Fprintd.VerifyStatus("verify-unknown-error"), .failed)
        XCTAssertEqual(Fprintd.VerifyStatus("verify-swipe-too-short"), .retry(hint: "Swipe was too short, try again"))
        // A word fprintd may add later is never a match.
        XCTAssertEqual(Fprintd.VerifyStatus("verify-match-maybe"), .unknown("verify-match-maybe"))
        XCTAssertEqual(Fprintd.VerifyStatus("VERIFY-MATCH"), .unknown("VERIFY-MATCH"))
        XCTAssertEqual(Fprintd.EnrollStatus("enroll-duplicate"), .duplicate)
        XCTAssertEqual(Fprintd.EnrollStatus("enroll-completed"), .completed)
        XCTAssertEqual(Fprintd.EnrollStatus("enroll-data-full"), .full)
        XCTAssertEqual(Fprintd.EnrollStatus("enroll-other"), .unknown("enroll-other"))
        XCTAssertEqual(Fprintd.enrollCommand(user: "alice", finger: "left-thumb"), "fprintd-enroll -f left-thumb alice")
    }

    func testAClosedLidSkipsWithoutATextAndIsNotAFailedAttempt() {
        let ledger = FakeLedger()
        let talk = RecordingConversation()
        let flow = testFlow(
            helper: ScriptedHelper([], fixed: .lidClosed("lid closed (logind); no reader on an external port")),
            store: FakeStore(), conversation: talk, random: FixedRandom(), users: KnownUsers(), ledger: ledger,
            hostName: "h")
        let outcome = flow.authenticate(LoginRequest(user: "alice", service: "sudo"), options: testOptions())
        XCTAssertEqual(outcome.code, .authInfoUnavailable)
        XCTAssertEqual(outcome.reason, "lid closed: lid closed (logind); no reader on an external port")
        XCTAssertEqual(outcome.category, .lidClosed)
        XCTAssertEqual(talk.infos, [])
        XCTAssertEqual(talk.errors, [])
        XCTAssertEqual(ledger.records["alice"]?.failures ?? 0, 0)
        XCTAssertEqual(
            HelperMessage(line: "FAIL lid-closed lid closed (logind)"), .fail(.lidClosed, detail: "lid closed (logind)")
        )
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

/// The lines between pam_fingerauth.so and fingerauth-pam: each reads back as itself, and
/// nothing else is read at all.
final class ModuleProtocolTests: XCTestCase {
    private func read(_ text: String, maxArguments: Int = 64) -> ModuleRequest? {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
        return ModuleRequest.read(maxArguments: maxArguments) { lines.popFirst() }
    }

    func testTheRequestReadsBackWithItsArgumentsInOrder() {
        let request = ModuleRequest(
            entry: .authenticate, flags: 0x8000, realUID: 1000, effectiveUID: 0, hostPID: 4242, started: 123_456,
            arguments: ["debug", "text.place_finger=Touch it\nnow", "conf=/etc/x.conf"])
        XCTAssertEqual(
            request.text,
            "FINGERAUTH-MODULE 1 AUTH\nFLAGS 32768\nCALLER 1000 0 4242\nSTARTED 123456\nARG debug\n"
                + "ARG text.place_finger=Touch it%0Anow\nARG conf=/etc/x.conf\nEND\n")
        XCTAssertEqual(read(request.text), request)
        let session = ModuleRequest(
            entry: .openSession, flags: 0, realUID: 0, effectiveUID: 0, hostPID: 1, started: 1, arguments: [])
        XCTAssertEqual(read(session.text), session)
    }

    func testARequestThatIsNotExactlyThatIsRefused() {
        let good = ModuleRequest(
            entry: .authenticate, flags: 0, realUID: 1, effectiveUID: 0, hostPID: 7, started: 1, arguments: ["a", "b"]
        ).text
        XCTAssertNotNil(read(good))
        XCTAssertNil(read(good.replacingAll("END\n", with: "")), "no END")
        XCTAssertNil(read(good.replacingAll("AUTH", with: "ACCOUNT")), "unknown entry point")
        XCTAssertNil(read(good.replacingAll("FINGERAUTH-MODULE 1", with: "FINGERAUTH-MODULE 2")), "other version")
        XCTAssertNil(read(good.replacingAll("CALLER 1 0 7", with: "CALLER 1 0")), "no pid")
        XCTAssertNil(read(good.replacingAll("CALLER 1 0 7", with: "CALLER -1 0 7")), "negative uid")
        XCTAssertNil(read(good.replacingAll("CALLER 1 0 7", with: "CALLER 1 0 0")), "no process")
        XCTAssertNil(read(good.replacingAll("ARG a", with: "ARGS a")), "unknown line")
        XCTAssertNil(read(good.replacingAll("ARG a", with: "ARG a%0")), "broken escape")
        XCTAssertNil(read(good, maxArguments: 1), "too many arguments")
    }

    func testKnownAnswersTravelWithTheRequestAfterItsArguments() {
        let known = [
            ModuleKnownAnswer(.item(.service), .value("sudo")), ModuleKnownAnswer(.item(.remoteHost), .none),
            ModuleKnownAnswer(.user, .value("alice")), ModuleKnownAnswer(.uid(of: "alice"), .value("1000")),
            ModuleKnownAnswer(.name(of: 1000), .value("alice")), ModuleKnownAnswer(.sshVariables, .ok),
            ModuleKnownAnswer(.item(.tty), .value("/dev/pts/3\nARG forged")),
        ].compactMap { $0 }
        XCTAssertEqual(known.count, 7)
        let request = ModuleRequest(
            entry: .authenticate, flags: 0, realUID: 1000, effectiveUID: 0, hostPID: 9, started: 5,
            arguments: ["debug"],
            known: known)
        XCTAssertTrue(
            request.text.hasSuffix(
                "ARG debug\nKNOWN ITEM SERVICE\nANSWER VALUE sudo\nKNOWN ITEM RHOST\nANSWER NONE\nKNOWN USER\n"
                    + "ANSWER VALUE alice\nKNOWN UID alice\nANSWER VALUE 1000\nKNOWN NAME 1000\nANSWER VALUE alice\n"
                    + "KNOWN SSH\nANSWER OK\nKNOWN ITEM TTY\nANSWER VALUE /dev/pts/3%0AARG forged\nEND\n"),
            request.text)
        XCTAssertEqual(read(request.text), request)
    }

    func testOnlyQuestionsCanBeAnsweredInAdvance() {
        for call: ModuleCall in [
            .info("x"), .error("x"), .secret("Password: "), .handOnSecret, .log(priority: 5, text: "x"),
            .result(.success),
        ] {
            XCTAssertNil(ModuleKnownAnswer(call, .ok), call.line)
        }
        let good = ModuleRequest(
            entry: .authenticate, flags: 0, realUID: 1, effectiveUID: 0, hostPID: 7, started: 1, arguments: ["a"],
            known: [ModuleKnownAnswer(.locale, .value("de_DE.UTF-8"))].compactMap { $0 }
        ).text
        XCTAssertNotNil(read(good))
        let forged: [(String, String, String)] = [
            ("KNOWN LOCALE", "KNOWN RESULT 0", "a result in advance"),
            ("KNOWN LOCALE", "KNOWN AUTHTOK", "the secret handed on in advance"),
            ("KNOWN LOCALE", "KNOWN INFO hi", "a message in advance"),
            ("ANSWER VALUE", "VALUE", "an answer without ANSWER"),
            ("ANSWER VALUE de_DE.UTF-8\n", "", "a call without its answer"),
            ("ANSWER VALUE de_DE.UTF-8", "ANSWER MAYBE", "an unknown answer"),
            ("END\n", "ARG b\nEND\n", "an argument after a known answer"),
        ]
        for (line, replacement, why) in forged {
            XCTAssertNil(read(good.replacingAll(line, with: replacement)), why)
        }
        let many = good.replacingAll(
            "END\n", with: String(repeating: "KNOWN SSH\nANSWER OK\n", count: ModuleProtocol.maxKnownAnswers) + "END\n")
        XCTAssertNil(read(many), "more known answers than the limit")
    }

    func testEveryCallReadsBackAsItself() {
        let calls: [ModuleCall] = [
            .item(.service), .item(.tty), .item(.remoteHost), .user, .uid(of: "alice"), .uid(of: "a b\n"),
            .name(of: 1000), .sshVariables, .locale, .terminal,
            .info("Place your finger on the fingerprint reader"), .error("line one\nline two"),
            .secret("Password or place your finger: "), .handOnSecret, .log(priority: 5, text: "service=sudo 100%"),
            .result(.success), .result(.authInfoUnavailable), .result(.ignore), .info(""),
        ]
        for call in calls {
            XCTAssertFalse(call.line.utf8.contains(0x0A), call.line)
            XCTAssertEqual(ModuleCall(line: call.line), call, call.line)
        }
    }

    func testForgedOrUnknownCallsAreRefused() {
        for line in [
            "", "RESULT", "RESULT 0 extra", "RESULT 42", "RESULT -1", "RESULT x", "ITEM USER", "ITEM", "USER x", "UID",
            "NAME x", "NAME -1",
            "LOG 9 text", "LOG x text", "LOG 5", "INFO a\tb", "INFO 100%", "SECRET", "AUTHTOK now", "info text",
        ] {
            XCTAssertNil(ModuleCall(line: line), line)
        }
    }

    func testEveryAnswerReadsBackAsItself() {
        let answers: [ModuleAnswer] = [
            .value("alice"), .value("a value\nwith a newline"), .value(""), .none, .ok, .failed(.conversationError),
            .empty, .given,
        ]
        for answer in answers {
            XCTAssertEqual(ModuleAnswer(line: answer.line), answer, answer.line)
        }
        for line in ["", "VALUE", "VALUE a%zz", "FAIL", "FAIL x", "ok", "GIVEN 1"] {
            XCTAssertNil(ModuleAnswer(line: line), line)
        }
    }
}

import FingerAuthCore
import XCTest

/// The one command-line parser of every FingerAuth program: the same refusal, in the same
/// words, for the same mistake (`fingerauth`, `fingerauthd`, `fingerauth-agent` and the
/// login helper add only their own prefix and usage).
final class CommandArgumentsTests: XCTestCase {
    private func parse(_ words: [String], maxPositional: Int = 0) throws(UsageError) -> CommandArguments {
        try CommandArguments(
            words, valued: ["user", "config"], switches: ["json", "all"], maxPositional: maxPositional)
    }

    private func refusal(_ words: [String], maxPositional: Int = 0) -> UsageError? {
        do {
            _ = try parse(words, maxPositional: maxPositional)
            return nil
        } catch {
            return error
        }
    }

    func testOptionsSwitchesAndPositionalWords() throws {
        let given = try parse(["--user", "alice", "--config=/etc/x.conf", "--json", "sudo"], maxPositional: 1)
        XCTAssertEqual(given["user"], "alice")
        XCTAssertEqual(given["config"], "/etc/x.conf")
        XCTAssertTrue(given.has("json"))
        XCTAssertFalse(given.has("all"))
        XCTAssertEqual(given.positional, ["sudo"])
        XCTAssertEqual(given.values, ["user": "alice", "config": "/etc/x.conf"])
        // The next word is the value, whatever it looks like.
        XCTAssertEqual(try parse(["--user", "--json"])["user"], "--json")
        XCTAssertEqual(try parse(["--config", "a=b"])["config"], "a=b")
    }

    /// A repeated option is refused, however it is spelled, and so is a repeated switch.
    func testARepeatedOptionIsRefused() {
        for words in [
            ["--user", "alice", "--user", "bob"], ["--user=alice", "--user", "bob"],
            ["--user", "alice", "--user=alice"],
        ] {
            XCTAssertEqual(refusal(words)?.cause, .repeatedOption, "\(words)")
            XCTAssertEqual(refusal(words)?.message, "--user given twice; give it once", "\(words)")
        }
        XCTAssertEqual(refusal(["--json", "--all", "--json"])?.message, "--json given twice; give it once")
        XCTAssertEqual(refusal(["--json", "--json"])?.cause, .repeatedOption)
    }

    func testEveryOtherMistakeHasItsCauseAndWords() {
        let cases: [([String], UsageError.Cause, String)] = [
            (["--colour"], .unknownOption, "unknown option --colour"),
            (["--colour=red"], .unknownOption, "unknown option --colour"),
            (["-u", "alice"], .unknownOption, "unknown option -u"),
            (["-user", "alice"], .unknownOption, "unknown option -user"),
            (["--"], .unknownOption, "unknown option --"),
            (["--user"], .missingValue, "--user needs a value"),
            (["--user", ""], .missingValue, "--user needs a value"),
            (["--user="], .missingValue, "--user needs a value"),
            (["--json=yes"], .switchWithValue, "--json takes no value"),
            (["sudo"], .unexpectedArgument, "unexpected argument 'sudo'"),
            (["--user", "alice", "extra"], .unexpectedArgument, "unexpected argument 'extra'"),
        ]
        for (words, cause, message) in cases {
            let error = refusal(words)
            XCTAssertEqual(error?.cause, cause, "\(words)")
            XCTAssertEqual(error?.message, message, "\(words)")
        }
        XCTAssertEqual(refusal(["a", "b"], maxPositional: 1)?.message, "unexpected argument 'b'")
    }

    /// A word repeated in a message is printable ASCII and short: the helper's usage line
    /// goes to the module, and a terminal must not interpret what was typed.
    func testWordsInMessagesAreCleaned() {
        XCTAssertEqual(refusal(["--\u{1b}[31mred"])?.message, "unknown option --?[31mred")
        XCTAssertEqual(refusal(["caf\u{e9}\n"])?.message, "unexpected argument 'caf??'")
        XCTAssertEqual(
            refusal(["--" + String(repeating: "x", count: 500)])?.message.count, "unknown option ".count + 64)
        XCTAssertEqual(UsageError.unknownCommand("keys fr\u{7}ob").message, "unknown command 'keys fr?ob'")
        // A combining mark after the dashes is part of no known name.
        XCTAssertEqual(refusal(["--\u{301}user", "alice"])?.cause, .unknownOption)
        XCTAssertEqual(refusal(["--user=\u{301}x", "--user", "y"])?.cause, .repeatedOption)
    }

    func testHelpIsAskedAnywhereAndNeverParsed() {
        XCTAssertTrue(CommandArguments.asksForHelp(["--user", "alice", "--help"]))
        XCTAssertTrue(CommandArguments.asksForHelp(["-h"]))
        XCTAssertFalse(CommandArguments.asksForHelp(["--user", "alice", "--helper"]))
        XCTAssertEqual(refusal(["--help"])?.message, "unknown option --help")
    }

    func testContextAndHintsKeepTheCause() {
        let error = refusal(["--user", "a", "--user", "b"])?.within("keys list")
        XCTAssertEqual(error?.message, "keys list: --user given twice; give it once")
        XCTAssertEqual(error?.cause, .repeatedOption)
        XCTAssertEqual(
            refusal(["--x"])?.adding("see 'fingerauthd keys list --help'").message,
            "unknown option --x; see 'fingerauthd keys list --help'")
        XCTAssertEqual(UsageError(message: "--since takes seconds").cause, .invalid)
    }

    func testGivenOptionsWinOverDefaults() throws {
        let merged = try parse(["--user", "alice"]).over(["user": "bob", "config": "/etc/c"])
        XCTAssertEqual(merged["user"], "alice")
        XCTAssertEqual(merged["config"], "/etc/c")
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import XCTest

final class OptionsTests: XCTestCase {
    func load(_ args: [String], file: String? = nil) throws -> Options {
        try OptionsLoader.load(arguments: args) { _ in file }
    }

    func testKeyStoreAndTheTPMsTCTIAreCheckedAndTheTCTITravelsToTheHelper() throws {
        var options = Options()
        XCTAssertEqual(options.keyStore, .file)
        try options.set("key_store", "auto", source: "t")
        XCTAssertEqual(options.keyStore, .auto)
        XCTAssertThrowsError(try options.set("key_store", "hsm", source: "t"))
        for good in ["device:/dev/tpmrm0", "swtpm:host=127.0.0.1,port=2321", "mssim:host=localhost,port=2321"] {
            XCTAssertNoThrow(try options.set("tpm_tcti", good, source: "t"), good)
        }
        // Only the three TCTIs: the loader would dlopen any other name (libtss2-tcti-NAME.so).
        for bad in [
            "", "device:", "libtpms", "cmd:/bin/sh -c id", "swtpm:host=a b", "/tmp/libevil.so", "device:/dev/tpm\u{7f}",
        ] {
            XCTAssertThrowsError(try options.set("tpm_tcti", bad, source: "t"), bad)
        }
        options.url = try AuthenticatorURL.parse("https://auth.example/v1/login").get()
        let job = LoginJob(user: "alice", service: "sudo", jti: "AAAAAAAAAAAAAAAAAAAAAA", issuer: "h", options: options)
        XCTAssertTrue(job.text.contains("\ntpm_tcti=mssim:host=localhost,port=2321\n"))
        XCTAssertEqual(try LoginJob.parse(job.text).options.tpmTCTI, "mssim:host=localhost,port=2321")
        XCTAssertFalse(job.text.contains("key_store"))
        XCTAssertThrowsError(try LoginJob.parse(job.text + "key_store=tpm\n"))
    }

    func testArgumentsOverrideTheFile() throws {
        let o = try load(
            ["timeout=4", "debug"], file: "url = https://a.example/v1/login\ntimeout = 9\n# c\n\nmax_tries=2\n")
        XCTAssertEqual(o.timeoutSeconds, 4)
        XCTAssertEqual(o.maxTries, 2)
        XCTAssertTrue(o.debug)
        XCTAssertEqual(o.effectiveAudience, "https://a.example/v1/login")
    }

    func testErrorsNameTheKeyAndLine() {
        XCTAssertThrowsError(try load([], file: "url = https://a.example/\nbogus = 1\n")) { error in
            XCTAssertEqual((error as? ConfigError)?.key, "bogus")
            XCTAssertEqual((error as? ConfigError)?.source, "/etc/security/fingerauth.conf:2")
        }
        XCTAssertThrowsError(try load(["url=https://a.example/", "timeout=0"])) {
            XCTAssertEqual(($0 as? ConfigError)?.key, "timeout")
        }
        XCTAssertThrowsError(try load(["url=https://a.example/", "ttl=301"])) {
            XCTAssertEqual(($0 as? ConfigError)?.key, "ttl")
        }
        XCTAssertThrowsError(try load(["url=https://a.example/", "claim.sub=x"])) {
            XCTAssertEqual(($0 as? ConfigError)?.key, "claim.sub")
        }
        XCTAssertThrowsError(try load(["url=https://a.example/", "state_dir=relative"])) {
            XCTAssertEqual(($0 as? ConfigError)?.key, "state_dir")
        }
        XCTAssertThrowsError(try load([])) { XCTAssertEqual(($0 as? ConfigError)?.key, "url") }
    }

    func testPlainHTTPOnlyToLoopbackAndOnlyWhenAllowed() {
        XCTAssertThrowsError(try load(["url=http://127.0.0.1:8080/v1/login"]))
        XCTAssertThrowsError(try load(["url=http://auth.example/v1/login", "allow_http"]))
        XCTAssertNoThrow(try load(["url=http://127.0.0.1:800/v1/login", "allow_http"]))
        XCTAssertThrowsError(try load(["url=http://127.0.0.1:8080/v1/login", "allow_http"]))
        XCTAssertThrowsError(try load(["url=https://user@auth.example/"]))
        XCTAssertThrowsError(try load(["url=ftp://auth.example/"]))
    }

    /// A port counts as privileged below the kernel's `ip_unprivileged_port_start`: lowered
    /// to 80, a local user could listen on 800 and stand in for the authenticator.
    func testPlainHTTPPortMustBeBelowTheKernelsUnprivilegedPortStart() throws {
        let allowed = try load(["url=http://127.0.0.1:800/v1/login", "allow_http"])
        XCTAssertNoThrow(try allowed.validated(source: "t", unprivilegedPortStart: 1024))
        XCTAssertThrowsError(try allowed.validated(source: "t", unprivilegedPortStart: 800)) { error in
            XCTAssertTrue("\(error)".contains("below 800"), "\(error)")
        }
        XCTAssertThrowsError(try allowed.validated(source: "t", unprivilegedPortStart: 0))
        XCTAssertThrowsError(
            try LoginJob.parse(
                "user=alice\nservice=sudo\njti=AAAAAAAAAAAAAAAAAAAAAA\nissuer=h\n"
                    + "url=http://127.0.0.1:800/v1/login\nallow_http=yes\n", unprivilegedPortStart: 80))
    }

    func testNamedConfFileMustExist() {
        XCTAssertThrowsError(try OptionsLoader.load(arguments: ["conf=/nonexistent", "url=https://a/"]) { _ in nil })
    }

    func testUserNames() {
        for ok in ["alice", "a.b-c_d", "_svc", "john.doe", "x1", "web-admin", String(repeating: "a", count: 32)] {
            XCTAssertTrue(UserName.isValid(ok), ok)
            XCTAssertNil(UserName.problem(ok), ok)
        }
        for bad in ["", ".", "..", "a/b", "-x", "al ice", String(repeating: "a", count: 33), "é", "1abc", "machine$"] {
            XCTAssertFalse(UserName.isValid(bad), bad)
        }
        // One person, one name: what Debian's adduser would not make is not a second alice.
        let problems = [
            "Carol": "upper-case letters", "carol.": "ends with '.'",
            ".carol": "must start with a lower-case letter or '_'",
            "ca..rol": "'..' inside", String(repeating: "c", count: 33): "longer than 32 bytes",
            "\u{212A}ate": "characters other than a-z, 0-9, '_', '-' and '.'", "": "empty",
        ]
        for (name, problem) in problems { XCTAssertEqual(UserName.problem(name), problem, name) }
    }

    func testServiceAndClaimNamesAreWordsNotUserNames() {
        for ok in ["sudo", "gdm-password", "polkit-1", "Login", "a.b"] { XCTAssertTrue(PortableWord.isValid(ok), ok) }
        for bad in ["", ".", "..", "-x", "a b", "a/b", String(repeating: "s", count: 33)] {
            XCTAssertFalse(PortableWord.isValid(bad), bad)
        }
    }
}

/// The `key = value` format every configuration file shares (the host's and fingerauthd's).
final class ConfigLinesTests: XCTestCase {
    func testEntriesWithTheirPlace() throws {
        let text = "# comment\n\n  url = https://a.example/v1/login \r\n\tdebug=yes\nempty =\n"
        XCTAssertEqual(
            try ConfigLines.parse(text, name: "/etc/f.conf"),
            [
                ConfigLine(key: "url", value: "https://a.example/v1/login", source: "/etc/f.conf:3"),
                ConfigLine(key: "debug", value: "yes", source: "/etc/f.conf:4"),
                ConfigLine(key: "empty", value: "", source: "/etc/f.conf:5"),
            ])
    }

    func testALineWithoutKeyOrEqualsNamesItsPlace() {
        for (text, place) in [("debug\n", "f.conf:1"), ("a = 1\n = 2\n", "f.conf:2")] {
            XCTAssertThrowsError(try ConfigLines.parse(text, name: "f.conf")) { error in
                XCTAssertEqual("\(error)", "\(place): expected 'key = value'")
            }
        }
    }
}

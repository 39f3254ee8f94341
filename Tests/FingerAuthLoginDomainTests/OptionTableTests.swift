import FingerAuthCore
import FingerAuthLoginDomain
import Foundation
import XCTest

/// `OptionTable` is the one list of settings: the configuration parser, the helper's request
/// and the documentation agree with it.
final class OptionTableTests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func read(_ path: String) throws -> String {
        try String(contentsOf: Self.repo.appendingPathComponent(path), encoding: .utf8)
    }

    /// A valid value for `entry` that is not its default.
    func sample(_ entry: OptionEntry) -> String {
        switch entry.kind {
        case .path: return "/run/sample/" + entry.key
        case .text: return "sample " + entry.key
        case let .number(range): return "\(range.upperBound)"
        case .flag: return entry.defaultText == "yes" ? "no" : "yes"
        case let .choice(words): return words.first { $0 != entry.defaultText } ?? ""
        case .checked:
            return entry.key == "url" ? "https://auth.example/v1/login" : "swtpm:host=127.0.0.1,port=2321"
        }
    }

    func job(_ options: Options) -> LoginJob {
        LoginJob(
            user: "alice", service: "sudo", jti: Base64URL.encode([UInt8](repeating: 7, count: 16)), issuer: "host-1",
            options: options)
    }

    func testTheTableNamesEachKeyOnceAndEachKeyTakesAValueAndItsDefault() throws {
        let keys = OptionTable.entries.map { $0.key }
        XCTAssertEqual(Set(keys).count, keys.count, "a key twice")
        XCTAssertGreaterThanOrEqual(keys.count, 30)
        for entry in OptionTable.entries {
            var options = Options()
            let value = sample(entry)
            XCTAssertNoThrow(try options.set(entry.key, value, source: "t"), entry.key)
            XCTAssertEqual(entry.value(in: options), value, entry.key)
            XCTAssertNotEqual(options, Options(), "\(entry.key): equality reads every setting")
            if let original = entry.defaultText {
                XCTAssertNoThrow(try options.set(entry.key, original, source: "t"), entry.key)
                XCTAssertEqual(options, Options(), "\(entry.key): its default reads back")
            }
        }
    }

    func testEveryOptionThatTravelsRoundTripsThroughTheHelpersRequest() throws {
        let travelling = OptionTable.entries.filter { $0.travelsToHelper }
        XCTAssertEqual(
            Set(travelling.map { $0.key }),
            [
                "url", "audience", "cafile", "pinned_pubkey", "timeout", "max_tries", "ttl", "state_dir",
                "virtual_reader", "allow_http", "tpm_tcti", "virtual_storage_reader", "virtual_reader_removable",
                "reader", "lid", "system_bus", "acpi_lid_dir", "approve_timeout",
            ])
        var all = Options()
        all.url = try AuthenticatorURL.parse("https://auth.example/v1/login").get()
        for entry in travelling {
            var options = Options()
            options.url = all.url
            try options.set(entry.key, sample(entry), source: "t")
            try all.set(entry.key, sample(entry), source: "t")
            let text = job(options).text
            XCTAssertTrue(text.contains("\n" + entry.key + "=" + sample(entry) + "\n"), entry.key)
            let back = try LoginJob.parse(text)
            XCTAssertEqual(back.options, options, entry.key)
            XCTAssertEqual(entry.value(in: back.options), sample(entry), entry.key)
        }
        XCTAssertEqual(try LoginJob.parse(job(all).text).options, all)
    }

    func testAnOptionThatStaysIsNeitherWrittenNorReadInTheRequest() throws {
        var options = Options()
        options.url = try AuthenticatorURL.parse("https://auth.example/v1/login").get()
        for entry in OptionTable.entries where !entry.travelsToHelper {
            var changed = options
            try changed.set(entry.key, sample(entry), source: "t")
            XCTAssertEqual(job(changed).text, job(options).text, entry.key)
            XCTAssertThrowsError(try LoginJob.parse(job(options).text + entry.key + "=" + sample(entry) + "\n")) {
                XCTAssertEqual(($0 as? ConfigError)?.message, "not a key of the request", entry.key)
            }
        }
    }

    /// The request's bytes as the module wrote them before the table: the helper of one
    /// release reads the module of the other.
    func testTheRequestKeepsItsBytes() throws {
        var o = Options()
        for (key, value) in [
            ("url", "https://auth.example/v1/login"), ("audience", "aud"), ("cafile", "/etc/ca.pem"),
            ("pinned_pubkey", "sha256//AAAA"), ("timeout", "9"), ("virtual_reader", "/run/v.sock"),
            ("tpm_tcti", "device:/dev/tpmrm0"), ("virtual_storage_reader", "/run/s.sock"),
            ("virtual_reader_removable", "yes"), ("reader", "libfprint"), ("lid", "ignore"), ("claim.team", "ops"),
            ("host_id", "not-sent"), ("debug", "yes"),
        ] {
            try o.set(key, value, source: "t")
        }
        var full = job(o)
        full.clientService = "i3lock"
        full.terminal = TerminalTarget(path: "/dev/pts/3", device: 34819)
        XCTAssertEqual(
            full.text,
            """
            user=alice
            service=sudo
            jti=BwcHBwcHBwcHBwcHBwcHBw
            issuer=host-1
            client_service=i3lock
            url=https://auth.example/v1/login
            audience=aud
            cafile=/etc/ca.pem
            pinned_pubkey=sha256//AAAA
            timeout=9
            max_tries=3
            ttl=30
            state_dir=/var/lib/fingerauth
            virtual_reader=/run/v.sock
            allow_http=no
            tpm_tcti=device:/dev/tpmrm0
            virtual_storage_reader=/run/s.sock
            virtual_reader_removable=yes
            reader=libfprint
            lid=ignore
            system_bus=/run/dbus/system_bus_socket
            acpi_lid_dir=/proc/acpi/button/lid
            claim.team=ops
            terminal=/dev/pts/3
            terminal_device=34819

            """)
        var plain = Options()
        plain.url = o.url
        XCTAssertEqual(
            job(plain).text,
            "user=alice\nservice=sudo\njti=BwcHBwcHBwcHBwcHBwcHBw\nissuer=host-1\nurl=https://auth.example/v1/login\n"
                + "timeout=10\nmax_tries=3\nttl=30\nstate_dir=/var/lib/fingerauth\nallow_http=no\nreader=auto\n"
                + "lid=skip\nsystem_bus=/run/dbus/system_bus_socket\nacpi_lid_dir=/proc/acpi/button/lid\n")
    }

    func testUnknownKeysAreRefusedWithTheMessageOfBefore() {
        for key in ["bogus", "user", "service", "jti", "issuer", "terminal", "text", "claim", "colour", ""] {
            var options = Options()
            XCTAssertThrowsError(try options.set(key, "1", source: "/etc/security/fingerauth.conf:4")) {
                XCTAssertEqual("\($0)", "/etc/security/fingerauth.conf:4: \(key): unknown key")
            }
        }
        // A key near one known key is answered with it (a typo otherwise turns the finger off unseen).
        let near = [
            ("timout", "timeout"), ("tiemout", "timeout"), ("URL", "url"), ("max-tries", "max_tries"),
            ("debugfile", "debug_file"), ("approve_timout", "approve_timeout"), ("ttls", "ttl"),
        ]
        for (typed, meant) in near {
            var options = Options()
            XCTAssertThrowsError(try options.set(typed, "1", source: "/etc/security/fingerauth.conf:4")) {
                XCTAssertEqual(
                    "\($0)", "/etc/security/fingerauth.conf:4: \(typed): unknown key; did you mean `\(meant)`?")
            }
        }
        XCTAssertNil(NearestKey.suggestion(for: String(repeating: "timeout", count: 10)))
        var options = Options()
        XCTAssertThrowsError(try options.set("text.nonsense", "x", source: "pam.d argument")) {
            XCTAssertTrue("\($0)".hasPrefix("pam.d argument: text.nonsense: unknown text; the texts are "), "\($0)")
        }
    }

    func testTheValueChecksSayWhatTheySaidBefore() {
        let refusals: [(String, String, String)] = [
            ("timeout", "0", "must be a whole number from 1 to 120"),
            ("max_tries", "11", "must be a whole number from 1 to 10"),
            ("ttl", "x", "must be a whole number from 1 to 300"),
            ("state_dir", "relative", "must be an absolute path"),
            ("audience", "", "must be 1 to 256 printable characters"),
            ("debug", "maybe", "must be yes or no"),
            ("reader", "usb", "must be libfprint, fprintd or auto"),
            ("lid", "open", "must be skip or ignore"),
            ("prompt", "both", "must be sequential or parallel"),
            ("key_store", "hsm", "must be tpm, file or auto"),
            ("remote", "yes", "must be allow, deny or approve"),
            ("url", "ftp://a.example/", "must start with https://"),
            ("tpm_tcti", "cmd:x", "must be a device:, swtpm: or mssim: TCTI string, e.g. device:/dev/tpmrm0"),
            ("text.no_match.su do", "x", "the service after the text's name must be a PAM service name"),
            ("text.no_match.caf\u{e9}", "x", "the service after the text's name must be a PAM service name"),
        ]
        for (key, value, message) in refusals {
            var options = Options()
            XCTAssertThrowsError(try options.set(key, value, source: "t"), key) {
                XCTAssertEqual(($0 as? ConfigError)?.message, message, key)
            }
        }
    }

    /// The shipped fingerauth.conf names every key once, and each example value is one the
    /// parser takes.
    func testEveryKeyOfTheShippedConfigurationIsInTheTableAndParses() throws {
        let text = try read("packaging/fingerauth.conf")
        var keys: [String] = []
        for line in text.split(separator: "\n") where line.hasPrefix("#") && line.contains(" = ") {
            let parts = line.dropFirst().split(separator: " = ", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0].allSatisfy({ $0.isLowercase || $0 == "_" }) else { continue }
            keys.append(parts[0])
            var options = Options()
            XCTAssertNoThrow(try options.set(parts[0], parts[1], source: "fingerauth.conf"), String(line))
        }
        XCTAssertEqual(Set(keys).count, keys.count)
        XCTAssertEqual(Set(keys), Set(OptionTable.entries.map { $0.key }))
    }

    /// fingerauth.conf(5) describes every key of the table and no other; pam_fingerauth(8)
    /// names only keys of the table (and `conf`, which only the pam.d line takes).
    func testTheManPagesNameTheTablesKeys() throws {
        let keys = Set(OptionTable.entries.map { $0.key })
        let families: Set<String> = ["text.", "claim."]
        let conf = try termsOfTaggedParagraphs(read("man/fingerauth.conf.5"), section: "KEYS")
        XCTAssertEqual(Set(conf), keys.union(families), "\(Set(conf).symmetricDifference(keys.union(families)))")
        XCTAssertEqual(Set(conf).count, conf.count)
        let module = try termsOfTaggedParagraphs(read("man/pam_fingerauth.8"), section: "OPTIONS")
        XCTAssertGreaterThanOrEqual(module.count, 20)
        XCTAssertTrue(Set(module).isSubset(of: keys.union(families).union(["conf"])), "\(module)")
    }

    /// The first word of each `.TP` paragraph's tag in one section: `.B url`, `.BI url= URL`.
    func termsOfTaggedParagraphs(_ page: String, section: String) -> [String] {
        var terms: [String] = []
        var inSection = false
        var tagNext = false
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(".SH ") {
                inSection = line == ".SH " + section
                continue
            }
            guard inSection else { continue }
            if line == ".TP" {
                tagNext = true
            } else if tagNext {
                tagNext = false
                let words = line.split(separator: " ")
                guard words.count > 1 else { continue }
                let term = words[1].prefix { $0.isLowercase || $0 == "_" || $0 == "." }
                terms.append(String(term.hasSuffix("=") ? term.dropLast() : term))
            }
        }
        return terms
    }

    func testTheHelperAndTheAgentTakeOnlyServiceNamesTheAuthenticatorTakes() throws {
        var options = Options()
        options.url = try AuthenticatorURL.parse("https://auth.example/v1/login").get()
        let good = job(options).text
        for service in ["su do", "caf\u{e9}", "\u{1F600}", String(repeating: "s", count: 65)] {
            for key in ["service", "client_service"] {
                let text =
                    key == "service"
                    ? good.replacingOccurrences(of: "service=sudo", with: "service=" + service)
                    : good + "client_service=" + service + "\n"
                XCTAssertThrowsError(try LoginJob.parse(text), key + " " + service) {
                    XCTAssertEqual(($0 as? ConfigError)?.message, "not a service name (\(ServiceName.rule))")
                }
            }
            XCTAssertNil(AgentRequest(line: "FINGERAUTH-AGENT 1 LOGIN alice \(service) silent"), service)
        }
        for service in ["sudo", "gdm-password", String(repeating: "s", count: 64)] {
            var withClient = job(options)
            withClient.service = service
            withClient.clientService = service
            XCTAssertEqual(try LoginJob.parse(withClient.text), withClient, service)
            XCTAssertEqual(
                AgentRequest(line: "FINGERAUTH-AGENT 1 LOGIN alice \(service) silent"),
                .login(user: "alice", service: service, silent: true))
        }
    }
}

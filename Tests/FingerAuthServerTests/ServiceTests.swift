import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthTransport
import FingerAuthWeb
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The endpoints through `LoginAPI`, without a socket: statuses, bodies, audit rows, and
/// what the log line holds.
final class ServiceTests: XCTestCase {
    var temp = TempDatabase()
    var clock = FakeClock()
    var logPipe: [Int32] = [-1, -1]

    override func setUp() {
        temp = TempDatabase()
        clock = FakeClock()
        logPipe = [-1, -1]
        pipe(&logPipe)
        _ = fcntl(logPipe[0], F_SETFL, O_NONBLOCK)
    }

    override func tearDown() {
        close(logPipe[0])
        close(logPipe[1])
        temp.cleanup()
    }

    func makeService(_ settings: ServiceSettings = ServiceSettings()) throws -> (AuthenticatorService, SQLiteStore) {
        let store = try SQLiteStore(path: temp.path)
        let service = wiredService(
            store: store, policy: VerifierPolicy(audience: "aud"), settings: settings,
            clock: clock, log: RequestLog(fd: logPipe[1]))
        return (service, store)
    }

    /// Registers TestKeys.alice for alice on host1 through the real endpoint.
    func registerAlice(_ service: AuthenticatorService, _ store: SQLiteStore) throws -> TokenMaker {
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let hostToken = try store.createHostToken(host: "host1", now: clock.now())
        let proof = maker.proof(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "proof"))
        let body = JSONEncoding.encode(
            .object([
                ("user", .string("alice")), ("host", .string("host1")),
                ("jwk", maker.jwk.json), ("proof", .string(proof)),
            ]))
        XCTAssertEqual(service.handle(post("/v1/keys", body, token: hostToken)).status, 201)
        return maker
    }

    /// A token that claims to be alice's: her kid, her name, a signature by another key.
    func forged(_ maker: TokenMaker, jti: String) throws -> String {
        let other = try XCTUnwrap(TokenMaker(TestKeys.other))
        return other.token(
            TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: jti), header: other.header(kid: maker.kid))
    }

    func post(_ path: String, _ body: String, token: String? = nil, peer: String) -> HTTPRequest {
        var request = post(path, body, token: token)
        request.peer = peer
        return request
    }

    /// The status of a login with a fresh token of `maker`'s key from `peer`.
    func loginStatus(_ service: AuthenticatorService, _ maker: TokenMaker, jti: String, peer: String) -> Int {
        let token = maker.token(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: jti))
        return service.handle(post("/v1/login", "{\"jwt\":\"\(token)\"}", peer: peer)).status
    }

    func testForgedTokensCountAgainstTheirAddressOnlyAndNameTheUserAsClaimed() throws {
        let (service, store) = try makeService(
            ServiceSettings(
                userLimit: RateLimit(failures: 10, window: 300),
                addressLimit: RateLimit(failures: 10, window: 300)))
        let maker = try registerAlice(service, store)
        for i in 0..<12 {
            let answer = service.handle(
                post("/v1/login", "{\"jwt\":\"\(try forged(maker, jti: "f\(i)"))\"}", peer: "10.6.6.6"))
            XCTAssertEqual(answer.status, i < 10 ? 401 : 429, "forged \(i)")
            if i < 10 { XCTAssertEqual(String(decoding: answer.body, as: UTF8.self), "{\"error\":\"invalid_token\"}") }
        }
        XCTAssertEqual(loginStatus(service, maker, jti: "g1", peer: "10.0.0.1"), 200)
        XCTAssertEqual(loginStatus(service, maker, jti: "g2", peer: "10.6.6.6"), 429)
        XCTAssertEqual(loginStatus(service, maker, jti: "g3", peer: "10.0.0.2"), 200)
        let forgedRows = try store.auditEvents(limit: 100).filter { $0.peer == "10.6.6.6" }
        XCTAssertEqual(forgedRows.count, 10)
        XCTAssertTrue(
            forgedRows.allSatisfy {
                $0.user == nil && $0.claimedUser == "alice" && !$0.verified && $0.reason?.text == "bad_signature"
            })
        XCTAssertTrue(logText().contains("reason=bad_signature sub=- claimed=alice"))
    }

    func testReplaysOfAVerifiedUserLimitThatUserAtThatAddress() throws {
        let (service, store) = try makeService(
            ServiceSettings(
                userLimit: RateLimit(failures: 10, window: 300),
                addressLimit: RateLimit(failures: 50, window: 300)))
        let maker = try registerAlice(service, store)
        let used = maker.token(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "used"))
        XCTAssertEqual(service.handle(post("/v1/login", "{\"jwt\":\"\(used)\"}", peer: "10.0.0.9")).status, 200)
        for _ in 0..<10 {
            let again = service.handle(post("/v1/login", "{\"jwt\":\"\(used)\"}", peer: "10.0.0.9"))
            XCTAssertEqual(String(decoding: again.body, as: UTF8.self), "{\"error\":\"replayed\"}")
        }
        XCTAssertEqual(loginStatus(service, maker, jti: "n1", peer: "10.0.0.9"), 429)
        XCTAssertEqual(loginStatus(service, maker, jti: "n2", peer: "10.0.0.8"), 200)
        let limited = try XCTUnwrap(try store.auditEvents().filter { $0.reason?.text == "rate_limited" }.last)
        XCTAssertEqual([limited.user, limited.peer], ["alice", "10.0.0.9"])
        XCTAssertTrue(limited.verified)
    }

    func testRefusalsPastTheAddressLimitAreCountedInOneRow() throws {
        let (service, store) = try makeService(ServiceSettings(addressLimit: RateLimit(failures: 3, window: 300)))
        let maker = try registerAlice(service, store)
        service.startWriter()
        for i in 0..<1000 {
            _ = service.handle(post("/v1/login", "{\"jwt\":\"\(try forged(maker, jti: "x\(i)"))\"}", peer: "10.6.6.6"))
        }
        service.stopWriter()
        let rows = try store.auditEvents(limit: 10_000).filter { $0.peer == "10.6.6.6" }
        XCTAssertEqual(
            rows.map { $0.event.name + ":" + ($0.reason?.text ?? "-") + ":\($0.count)" },
            ["login:bad_signature:1", "login:bad_signature:1", "login:bad_signature:1", "refusals:rate_limited:997"])
        let log = logText()
        XCTAssertEqual(log.components(separatedBy: "status=429").count - 1, 1, "one 429 line, then counted quietly")
        XCTAssertTrue(log.contains("10.6.6.6 is past its failure limit"))
        XCTAssertTrue(
            service.metrics.render(keys: nil, refusalsCounted: 997).contains("fingerauthd_refusals_counted_total 997"))
    }

    func logText() -> String {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = read(logPipe[0], &buffer, buffer.count)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }

    func post(_ path: String, _ body: String, token: String? = nil) -> HTTPRequest {
        HTTPRequest(
            method: "POST", path: path, authorization: token.map { "Bearer " + $0 },
            contentType: "application/json", body: Array(body.utf8), peer: "127.0.0.1")
    }

    func testRegisterThenLoginThenRevoke() throws {
        let (service, store) = try makeService()
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let hostToken = try store.createHostToken(host: "host1", now: clock.now())
        let proof = maker.proof(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "proof"))
        let body = JSONEncoding.encode(
            .object([
                ("user", .string("alice")), ("host", .string("host1")),
                ("jwk", maker.jwk.json), ("proof", .string(proof)),
            ]))
        let created = service.handle(post("/v1/keys", body, token: hostToken))
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(
            String(decoding: created.body, as: UTF8.self), "{\"kid\":\"\(maker.kid)\",\"status\":\"active\"}")

        let jwt = maker.token(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "login1"))
        let ok = service.handle(post("/v1/login", "{\"jwt\":\"\(jwt)\"}"))
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(
            String(decoding: ok.body, as: UTF8.self),
            "{\"ok\":true,\"sub\":\"alice\",\"kid\":\"\(maker.kid)\",\"jti\":\"login1\"}")
        let last = try XCTUnwrap(try store.auditEvents().last)
        var expected = AuditEvent(
            event: .login, user: "alice", host: "host1", kid: maker.kid, jti: "login1",
            outcome: .accept, peer: "127.0.0.1")
        expected.service = "sudo"
        XCTAssertEqual(last, expected)

        let revoke = HTTPRequest(method: "DELETE", path: "/v1/keys/" + maker.kid, authorization: "Bearer " + hostToken)
        XCTAssertEqual(service.handle(revoke).status, 204)
        let jwt2 = maker.token(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "login2"))
        let refused = service.handle(post("/login", "{\"jwt\":\"\(jwt2)\"}"))
        XCTAssertEqual(refused.status, 401)
        XCTAssertEqual(String(decoding: refused.body, as: UTF8.self), "{\"error\":\"key_revoked\"}")

        let log = logText()
        XCTAssertFalse(log.contains(jwt) || log.contains(jwt2) || log.contains(proof) || log.contains(hostToken))
        XCTAssertTrue(log.contains("path=/v1/login status=200 outcome=accept reason=- sub=alice"))
    }

    func testBodyAndRouteErrors() throws {
        let (service, store) = try makeService()
        XCTAssertEqual(service.handle(post("/v1/login", "{\"jwt\":")).status, 400)
        XCTAssertEqual(service.handle(post("/v1/login", "[]")).status, 400)
        var big = post("/v1/login", "{}")
        big.bodyTooLarge = true
        XCTAssertEqual(service.handle(big).status, 413)
        var plain = post("/v1/login", "{}")
        plain.contentType = "text/plain"
        XCTAssertEqual(service.handle(plain).status, 415)
        XCTAssertEqual(service.handle(HTTPRequest(method: "GET", path: "/v1/login")).status, 405)
        XCTAssertEqual(service.handle(HTTPRequest(method: "PUT", path: "/v1/keys/x")).status, 405)
        XCTAssertEqual(service.handle(HTTPRequest(method: "GET", path: "/elsewhere")).status, 404)
        XCTAssertEqual(service.handle(HTTPRequest(method: "GET", path: "/healthz")).status, 200)
        XCTAssertEqual(
            try store.auditEvents().map(\.reason?.text),
            [
                "invalid_json", "invalid_request", "body_too_large",
                "unsupported_media_type",
            ])
    }

    func testALogLineNamesEveryFieldOnce() {
        var summary = RequestSummary(
            method: "POST", path: "/v1/login", status: 401, outcome: .deny, reason: AuditReason(text: "replayed"),
            sub: "alice", kid: "k\"1", jti: "j 1", peer: "10.0.0.9")
        summary.milliseconds = 3
        XCTAssertEqual(
            summary.line,
            "fingerauthd: method=POST path=/v1/login status=401 outcome=deny "
                + "reason=replayed sub=alice kid=k?1 jti=j?1 peer=10.0.0.9 ms=3\n")
        summary.facts.claimed = "b\u{e9}b"
        summary.facts.sub = nil
        summary.milliseconds = nil
        summary.facts.jti = String(repeating: "j", count: 70)
        XCTAssertEqual(
            summary.line,
            "fingerauthd: method=POST path=/v1/login status=401 outcome=deny "
                + "reason=replayed sub=- claimed=b??b kid=k?1 jti=" + String(repeating: "j", count: 64)
                + "... peer=10.0.0.9 ms=-\n")
    }

    func testPathsInLogLinesAreCutShortAndCleaned() {
        let long = "/" + String(repeating: "eyJhbGciOiJSUzI1NiJ9", count: 10) + "\n\"x"
        let line = RequestSummary(method: "GET", path: long, status: 404).line
        XCTAssertTrue(line.hasSuffix("\n"))
        XCTAssertEqual(line.filter { $0 == "\n" }.count, 1)
        XCTAssertFalse(line.contains(String(repeating: "eyJhbGciOiJSUzI1NiJ9", count: 3)))
    }

    func testListenAddresses() {
        XCTAssertEqual(ListenAddress("127.0.0.1:0")?.isLoopback, true)
        XCTAssertEqual(ListenAddress("127.1.2.3:8443")?.isLoopback, true)
        XCTAssertEqual(ListenAddress("[::1]:8443")?.isLoopback, true)
        XCTAssertEqual(ListenAddress("[::1]:8443")?.urlHost, "[::1]")
        XCTAssertEqual(ListenAddress("0.0.0.0:8443")?.isLoopback, false)
        XCTAssertEqual(ListenAddress("10.0.0.1:443")?.isLoopback, false)
        XCTAssertNil(ListenAddress("localhost:8443"))
        XCTAssertNil(ListenAddress("127.0.0.1"))
        XCTAssertNil(ListenAddress("127.0.0.1:65536"))
        XCTAssertNil(ListenAddress("127.0.0.1:-1"))
        XCTAssertNil(ListenAddress("[::1]8443"))
    }

    func testNames() {
        XCTAssertTrue(Names.isValidUser("alice"))
        XCTAssertTrue(Names.isValidUser("a.b-c_d"))
        for bad in ["", "-x", ".x", "a/b", "a..b", "a b", "é", String(repeating: "a", count: 33), "Carol", "carol."] {
            XCTAssertFalse(Names.isValidUser(bad), bad)
        }
        XCTAssertTrue(Names.isValidHost("host1.example.com"))
        XCTAssertFalse(Names.isValidHost("host1/../x"))
    }
}

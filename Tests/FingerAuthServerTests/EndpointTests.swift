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

/// /oauth2/token, key-holder DELETE, pending keys, rate limits over time and /metrics,
/// driven through `LoginAPI` without a socket, on a real store and a fake clock.
final class EndpointTests: DatabaseTestCase {
    var hostToken = ""

    func makeService(_ settings: ServiceSettings = ServiceSettings()) throws -> (
        AuthenticatorService, SQLiteStore, TokenMaker
    ) {
        let store = try SQLiteStore(path: temp.path)
        let log = RequestLog(fd: open("/dev/null", O_WRONLY | O_CLOEXEC))
        let service = wiredService(
            store: store, policy: VerifierPolicy(audience: "aud"), settings: settings,
            clock: clock, log: log)
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let hostToken = try store.createHostToken(host: "host1", now: clock.now())
        let proof = maker.proof(TokenMaker.claims(now: clock.now(), jti: "proof-\(clock.now())"))
        let body = JSONEncoding.encode(
            .object([
                ("user", .string("alice")), ("host", .string("host1")),
                ("jwk", maker.jwk.json), ("proof", .string(proof)),
            ]))
        let created = service.handle(
            HTTPRequest(
                method: "POST", path: "/v1/keys", authorization: "Bearer " + hostToken,
                contentType: "application/json", body: Array(body.utf8), peer: "10.0.0.1"))
        XCTAssertEqual(created.status, 201)
        self.hostToken = hostToken
        return (service, store, maker)
    }

    func form(_ text: String, peer: String = "10.0.0.1") -> HTTPRequest {
        HTTPRequest(
            method: "POST", path: "/oauth2/token", contentType: "application/x-www-form-urlencoded",
            body: Array(text.utf8), peer: peer)
    }

    func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    func testGrantIssuesAnOpaqueTokenAndRefusesReplayAsInvalidGrant() throws {
        let (service, store, maker) = try makeService()
        let jwt = maker.token(TokenMaker.claims(now: clock.now(), jti: "g1"))
        let request = form("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + jwt)
        let ok = service.handle(request)
        XCTAssertEqual(ok.status, 200)
        let json = try JSONParser(maxBytes: 4096, maxDepth: 4).parse(ok.body)
        XCTAssertEqual(json["token_type"]?.stringValue, "Bearer")
        XCTAssertEqual(json["expires_in"]?.int64Value, 300)
        XCTAssertEqual(json["access_token"]?.stringValue?.utf8.count, 43)
        let again = service.handle(request)
        XCTAssertEqual(again.status, 400)
        XCTAssertEqual(text(again), "{\"error\":\"invalid_grant\",\"error_description\":\"replayed\"}")
        XCTAssertEqual(try store.auditEvents().suffix(2).map(\.event.name), ["oauth_token", "oauth_token"])
        XCTAssertEqual(try store.auditEvents().suffix(2).map(\.outcome.name), ["accept", "deny"])
    }

    func testMalformedGrantRequests() throws {
        let (service, _, _) = try makeService(ServiceSettings(addressLimit: .off))
        let cases: [(String, String)] = [
            ("", "invalid_request"),
            ("assertion=a.b.c", "invalid_request"),
            ("grant_type=password&username=a", "unsupported_grant_type"),
            ("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer", "invalid_request"),
            ("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=", "invalid_request"),
            ("grant_type=a&grant_type=a", "invalid_request"),
            ("grant_type=%4", "invalid_request"),
            ("grant_type=%ff%fe", "invalid_request"),
            ("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=x.y.z", "invalid_grant"),
        ]
        for (body, error) in cases {
            let answer = service.handle(form(body))
            XCTAssertEqual(answer.status, 400, body)
            XCTAssertTrue(text(answer).hasPrefix("{\"error\":\"\(error)\""), body + " -> " + text(answer))
        }
        var json = form("grant_type=x")
        json.contentType = "application/json"
        XCTAssertEqual(text(service.handle(json)), "{\"error\":\"invalid_request\"}")
    }

    func testContentTypeIsComparedAsAMediaType() throws {
        let (service, _, _) = try makeService()
        func status(_ path: String, _ type: String) -> Int {
            service.handle(HTTPRequest(method: "POST", path: path, contentType: type, body: Array("{}".utf8))).status
        }
        for type in ["application/json", "Application/JSON", " application/json\t; charset=utf-8", "APPLICATION/JSON;"]
        {
            XCTAssertEqual(status("/v1/login", type), 400, type)
        }
        for type in [
            "", "application/jsonx", "application/js", "text/plain", "application/json,text/plain",
            "applicatio\u{0301}n/json", "appli\u{212A}ation/json", "application /json", "application\u{0}/json",
        ] {
            XCTAssertEqual(status("/v1/login", type), 415, type)
        }
        func grant(_ type: String) -> String {
            text(
                service.handle(
                    HTTPRequest(
                        method: "POST", path: "/oauth2/token", contentType: type,
                        body: Array("grant_type=x".utf8))))
        }
        XCTAssertTrue(grant("Application/X-WWW-Form-Urlencoded ; charset=utf-8").contains("\"unsupported_grant_type\""))
        XCTAssertTrue(grant("application/x-www-form-urlencodedx").contains("\"invalid_request\""))
    }

    func testUserLimitEndsWithItsWindow() throws {
        let (service, _, maker) = try makeService(
            ServiceSettings(
                userLimit: RateLimit(failures: 2, window: 60),
                addressLimit: .off))
        func login(_ jti: String, aud: String = "aud") -> HTTPResponse {
            let jwt = maker.token(TokenMaker.claims(now: clock.now(), aud: .string(aud), jti: jti))
            return service.handle(
                HTTPRequest(
                    method: "POST", path: "/v1/login", contentType: "application/json",
                    body: Array("{\"jwt\":\"\(jwt)\"}".utf8), peer: "10.0.0.2"))
        }
        XCTAssertEqual(login("f1", aud: "x").status, 401)
        XCTAssertEqual(login("f2", aud: "x").status, 401)
        clock.current += 10
        let limited = login("ok1")
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(limited.headers.first { $0.0 == "Retry-After" }?.1, "50")
        clock.current += 50
        XCTAssertEqual(login("ok2").status, 200)
        XCTAssertTrue(service.metrics.render(keys: nil).contains("fingerauthd_rate_limited_total{scope=\"user\"} 1\n"))
    }

    func testKeyHolderRevocationAndPendingKeys() throws {
        let (service, store, maker) = try makeService(ServiceSettings(approval: .manual))
        XCTAssertEqual(try store.registeredKey(kid: maker.kid)?.status, .pending)
        let login = maker.token(TokenMaker.claims(now: clock.now(), jti: "l1"))
        let refused = service.handle(
            HTTPRequest(
                method: "POST", path: "/v1/login", contentType: "application/json",
                body: Array("{\"jwt\":\"\(login)\"}".utf8)))
        XCTAssertEqual(text(refused), "{\"error\":\"key_pending\"}")
        XCTAssertEqual(try store.approve(kid: maker.kid), .approved)
        XCTAssertEqual(try store.approve(kid: maker.kid), .alreadyActive)
        XCTAssertEqual(
            try store.keyCounts().map { "\($0.0.rawValue)=\($0.1)" }, ["active=1", "pending=0", "revoked=0"])

        let other = try XCTUnwrap(TokenMaker(TestKeys.other))
        let path = "/v1/keys/" + maker.kid
        func delete(_ credential: String) -> HTTPResponse {
            service.handle(HTTPRequest(method: "DELETE", path: path, authorization: "Bearer " + credential))
        }
        // Someone else's revocation token for this key: refused before anything is said.
        XCTAssertEqual(
            text(delete(other.revocation(TokenMaker.claims(now: clock.now(), jti: "d0")))),
            "{\"error\":\"invalid_token\"}")
        // A captured login token of the key's own holder cannot revoke it.
        XCTAssertEqual(
            text(delete(maker.token(TokenMaker.claims(now: clock.now(), jti: "d-login")))),
            "{\"error\":\"invalid_token\"}")
        XCTAssertEqual(try store.registeredKey(kid: maker.kid)?.status, .active)
        let own = maker.revocation(TokenMaker.claims(now: clock.now(), jti: "d1"))
        XCTAssertEqual(delete(own).status, 204)
        XCTAssertEqual(try store.registeredKey(kid: maker.kid)?.status, .revoked)
        XCTAssertEqual(try store.approve(kid: maker.kid), .revoked)
        let last = try XCTUnwrap(try store.auditEvents().last)
        XCTAssertEqual([last.event.name, last.outcome.name, last.reason?.text], ["revoke", "accept", "key_holder"])
        // The revocation token used once is no login either, and cannot be used again.
        XCTAssertEqual(text(delete(own)), "{\"error\":\"key_revoked\"}")
    }

    func testTokensOfOtherKindsAreNoLogin() throws {
        let (service, _, maker) = try makeService(ServiceSettings(addressLimit: .off))
        func login(_ jwt: String, path: String = "/v1/login") -> String {
            text(
                service.handle(
                    HTTPRequest(
                        method: "POST", path: path, contentType: "application/json",
                        body: Array("{\"jwt\":\"\(jwt)\"}".utf8))))
        }
        XCTAssertEqual(
            login(maker.revocation(TokenMaker.claims(now: clock.now(), jti: "r1"))), "{\"error\":\"invalid_token\"}")
        XCTAssertEqual(
            login(maker.proof(TokenMaker.claims(now: clock.now(), jti: "p1"))), "{\"error\":\"invalid_token\"}")
        XCTAssertEqual(
            login(maker.proof(TokenMaker.claims(now: clock.now(), jti: "p2")), path: "/login"),
            "{\"error\":\"invalid_token\"}")
        let grant = form(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="
                + maker.revocation(TokenMaker.claims(now: clock.now(), jti: "r2")))
        XCTAssertEqual(text(service.handle(grant)), "{\"error\":\"invalid_grant\"}")
        XCTAssertTrue(login(maker.token(TokenMaker.claims(now: clock.now(), jti: "ok"))).hasPrefix("{\"ok\":true"))
    }

    func testIntrospectionEndsWithTheKey() throws {
        let (service, store, maker) = try makeService()
        let jwt = maker.token(TokenMaker.claims(now: clock.now(), jti: "g1"))
        let ok = service.handle(
            form("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + jwt))
        let access = try XCTUnwrap(
            try JSONParser(maxBytes: 4096, maxDepth: 4).parse(ok.body)["access_token"]?.stringValue)
        func introspect(_ token: String, host: String?) -> HTTPResponse {
            service.handle(
                HTTPRequest(
                    method: "POST", path: "/oauth2/introspect", authorization: host.map { "Bearer " + $0 },
                    contentType: "application/x-www-form-urlencoded", body: Array("token=\(token)".utf8)))
        }
        XCTAssertEqual(introspect(access, host: nil).status, 401)
        let active = try JSONParser(maxBytes: 4096, maxDepth: 4).parse(introspect(access, host: hostToken).body)
        XCTAssertEqual(active["active"], .bool(true))
        XCTAssertEqual(active["sub"]?.stringValue, "alice")
        // another token: its first character changed (to one it is not: "x" + dropFirst() was
        // the same token once in 64 runs)
        let other = (access.first == "x" ? "y" : "x") + access.dropFirst()
        XCTAssertEqual(text(introspect(other, host: hostToken)), "{\"active\":false}")
        XCTAssertEqual(try store.revoke(kid: maker.kid, now: clock.now()), .revoked)
        XCTAssertEqual(text(introspect(access, host: hostToken)), "{\"active\":false}")
    }

    func testMetricsCanRequireABearerToken() throws {
        let (service, _, _) = try makeService(ServiceSettings(metricsToken: "metrics-secret-0123456789"))
        XCTAssertEqual(service.handle(HTTPRequest(method: "GET", path: "/metrics")).status, 401)
        XCTAssertEqual(
            service.handle(HTTPRequest(method: "GET", path: "/metrics", authorization: "Bearer nope")).status, 401)
        XCTAssertEqual(
            service.handle(
                HTTPRequest(
                    method: "GET", path: "/metrics",
                    authorization: "Bearer metrics-secret-0123456789")
            ).status, 200)
    }

    func testMetricsTextHasEveryFamily() throws {
        let (service, _, _) = try makeService()
        let answer = service.handle(HTTPRequest(method: "GET", path: "/metrics"))
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.contentType, "text/plain; version=0.0.4; charset=utf-8")
        let body = text(answer)
        for family in [
            "fingerauthd_logins_total", "fingerauthd_key_events_total", "fingerauthd_replays_refused_total",
            "fingerauthd_rate_limited_total", "fingerauthd_requests_total",
            "fingerauthd_request_duration_seconds", "fingerauthd_keys", "fingerauthd_unverified_tokens_total",
            "fingerauthd_refusals_counted_total", "fingerauthd_commit_batches_total",
        ] {
            XCTAssertTrue(body.contains("# TYPE \(family) "), family)
        }
        XCTAssertTrue(
            body.contains("fingerauthd_key_events_total{event=\"register\",outcome=\"accept\",reason=\"none\"} 1\n"))
        XCTAssertTrue(body.contains("fingerauthd_keys{status=\"active\"} 1\n"))
        XCTAssertEqual(service.handle(HTTPRequest(method: "POST", path: "/metrics")).status, 405)
    }
}

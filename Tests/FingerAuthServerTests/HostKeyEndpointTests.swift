import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthTransport
import FingerAuthWeb
import XCTest

/// `POST /v1/hosts/keys` through `LoginAPI`, without a socket, on a real SQLite file:
/// statuses, bodies, audit rows, and the registrations a host may make per window, which
/// its device keys and its host keys share.
final class HostKeyEndpointTests: DatabaseTestCase {
    func makeService(_ settings: ServiceSettings = ServiceSettings()) throws -> (AuthenticatorService, SQLiteStore) {
        let store = try SQLiteStore(path: temp.path)
        return (
            wiredService(store: store, policy: VerifierPolicy(audience: "aud"), settings: settings, clock: clock), store
        )
    }

    func post(_ path: String, _ document: JSONValue, token: String?) -> HTTPRequest {
        HTTPRequest(
            method: "POST", path: path, authorization: token.map { "Bearer " + $0 }, contentType: "application/json",
            body: JSONEncoding.encodeBytes(document), peer: "127.0.0.1")
    }

    func hostKeyBody(_ maker: TokenMaker, host: String = "web01", sub: String? = nil, jti: String) -> JSONValue {
        let proof = maker.token(
            TokenMaker.claims(now: clock.now(), sub: sub ?? host, iss: host, aud: .string("aud"), jti: jti),
            header: maker.header(typ: TokenType.hostKeyProof))
        return .object([("host", .string(host)), ("jwk", maker.jwk.json), ("proof", .string(proof))])
    }

    func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    func testRegistrationAnswersAndRows() throws {
        let (service, store) = try makeService()
        let maker = try XCTUnwrap(TokenMaker(TestKeys.other))
        let token = try store.createHostToken(host: "web01", now: clock.now())
        let created = service.handle(post("/v1/hosts/keys", hostKeyBody(maker, jti: "h1"), token: token))
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(text(created), "{\"kid\":\"\(maker.kid)\",\"status\":\"active\",\"host\":\"web01\"}")
        let again = service.handle(post("/v1/hosts/keys", hostKeyBody(maker, jti: "h2"), token: token))
        XCTAssertEqual([again.status], [200])
        XCTAssertEqual(text(again), text(created))
        let wrongSub = service.handle(post("/v1/hosts/keys", hostKeyBody(maker, sub: "alice", jti: "h3"), token: token))
        XCTAssertEqual(wrongSub.status, 400)
        XCTAssertEqual(text(wrongSub), "{\"error\":\"proof_wrong_sub\"}")
        let noToken = service.handle(post("/v1/hosts/keys", hostKeyBody(maker, jti: "h4"), token: nil))
        XCTAssertEqual(noToken.status, 401)
        let otherHost = service.handle(
            post("/v1/hosts/keys", hostKeyBody(maker, host: "web02", jti: "h5"), token: token))
        XCTAssertEqual(otherHost.status, 403)
        XCTAssertEqual(text(otherHost), "{\"error\":\"host_mismatch\"}")
        XCTAssertEqual(
            try store.auditEvents().map { "\($0.event.name):\($0.outcome.name):\($0.reason?.text ?? "-")" },
            [
                "host_key_register:accept:-", "host_key_register:deny:proof_wrong_sub",
                "host_key_register:deny:bad_host_token", "host_key_register:deny:host_mismatch",
            ])
        XCTAssertEqual(try store.hostKey(kid: maker.kid)?.status, .active)
        // Never a login key.
        let login = maker.token(TokenMaker.claims(now: clock.now(), sub: "alice", iss: "web01", aud: .string("aud")))
        let refused = service.handle(post("/v1/login", .object([("jwt", .string(login))]), token: nil))
        XCTAssertEqual(refused.status, 401)
        XCTAssertEqual(try store.auditEvents().last?.reason, .token(.unknownKid))
    }

    func testDeviceKeysAndHostKeysShareTheHostsRegistrations() throws {
        var settings = ServiceSettings()
        settings.hostRegistrations = RateLimit(failures: 2, window: 300)
        let (service, store) = try makeService(settings)
        let alice = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let host = try XCTUnwrap(TokenMaker(TestKeys.other))
        let token = try store.createHostToken(host: "host1", now: clock.now())
        let proof = alice.proof(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "d1"))
        let device: JSONValue = .object([
            ("user", .string("alice")), ("host", .string("host1")), ("jwk", alice.jwk.json), ("proof", .string(proof)),
        ])
        XCTAssertEqual(service.handle(post("/v1/keys", device, token: token)).status, 201)
        XCTAssertEqual(
            service.handle(post("/v1/hosts/keys", hostKeyBody(host, host: "host1", jti: "h1"), token: token)).status,
            201)
        let limited = service.handle(post("/v1/hosts/keys", hostKeyBody(host, host: "host1", jti: "h2"), token: token))
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(text(limited), "{\"error\":\"rate_limited\"}")
    }

    func testOnlyPostIsRouted() throws {
        let (service, _) = try makeService()
        let get = service.handle(HTTPRequest(method: "GET", path: "/v1/hosts/keys"))
        XCTAssertEqual(get.status, 405)
        XCTAssertEqual(LoginAPI.route(method: "POST", path: "/v1/hosts/keys"), .operation(.registerHostKey))
        XCTAssertEqual(LoginAPI.label("/v1/hosts/keys"), "/v1/hosts/keys")
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthTransport
import XCTest

/// The service's operations as the domain gives them, over the real SQLite store: an
/// operation and the request's facts in, an `Outcome` out — no method, path, header or
/// status anywhere (those are the transport's, `AnswerMappingTests`).
final class OutcomeTests: DatabaseTestCase {
    func makeService(_ settings: ServiceSettings = ServiceSettings()) throws -> (AuthenticatorService, SQLiteStore) {
        let store = try SQLiteStore(path: temp.path)
        let service = wiredService(
            store: store, policy: VerifierPolicy(audience: "aud"), settings: settings, clock: clock,
            log: RequestLog(fd: -1))
        return (service, store)
    }

    func json(_ text: String, credential: String? = nil, peer: String = "10.0.0.1") -> ServiceRequest {
        ServiceRequest(peer: peer, credential: credential, media: .json, body: Array(text.utf8))
    }

    func outcome(_ service: AuthenticatorService, _ operation: ServiceOperation, _ request: ServiceRequest) -> Outcome {
        service.perform(operation, request).1
    }

    func registration(_ maker: TokenMaker, jti: String, proof given: String? = nil) -> String {
        let proof = given ?? maker.proof(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: jti))
        return JSONEncoding.encode(
            .object([
                ("user", .string("alice")), ("host", .string("host1")), ("jwk", maker.jwk.json),
                ("proof", .string(proof)),
            ]))
    }

    func testRegisterLoginStatusAndRevokeEndInTheirOutcomes() throws {
        let (service, store) = try makeService()
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let hostToken = try store.createHostToken(host: "host1", now: clock.now())
        let body = registration(maker, jti: "proof1")

        XCTAssertEqual(
            outcome(service, .register, json(body, credential: hostToken)),
            .registered(KeyRegistered(kid: maker.kid, status: .active, new: true, grantKeys: nil)))
        XCTAssertEqual(
            outcome(service, .register, json(registration(maker, jti: "proof2"), credential: hostToken)),
            .registered(KeyRegistered(kid: maker.kid, status: .active, new: false, grantKeys: nil)))
        let stranger = maker.proof(TokenMaker.claims(now: clock.now(), aud: .string("elsewhere"), jti: "proof3"))
        XCTAssertEqual(
            outcome(
                service, .register, json(registration(maker, jti: "proof3", proof: stranger), credential: hostToken)),
            .proofRefused(.proof(.audience)))

        let jwt = maker.token(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "login1"))
        let (exchange, accepted) = service.perform(.login, json("{\"jwt\":\"\(jwt)\"}"))
        XCTAssertEqual(accepted, .loggedIn(LoginAccepted(user: "alice", kid: maker.kid, jti: "login1", offline: nil)))
        XCTAssertEqual(exchange.facts.outcome, .accept)
        XCTAssertEqual(exchange.facts.sub, "alice")
        XCTAssertEqual(outcome(service, .login, json("{\"jwt\":\"\(jwt)\"}")), .tokenRefused(.replayed))

        guard case let .keyStatus(key) = outcome(service, .keyStatus(kid: maker.kid), json("", credential: hostToken))
        else { return XCTFail("no key status") }
        XCTAssertEqual(key.user, "alice")
        XCTAssertEqual(outcome(service, .keyStatus(kid: "nope"), json("", credential: hostToken)), .unknownKey)
        XCTAssertEqual(outcome(service, .revoke(kid: maker.kid), json("", credential: hostToken)), .revoked)
        let jwt2 = maker.token(TokenMaker.claims(now: clock.now(), aud: .string("aud"), jti: "login2"))
        XCTAssertEqual(outcome(service, .login, json("{\"jwt\":\"\(jwt2)\"}")), .tokenRefused(.keyRevoked))
    }

    func testRefusalsBeforeAnyLookupAreMalformedOrUnverified() throws {
        let (service, store) = try makeService()
        XCTAssertEqual(outcome(service, .login, json("{\"jwt\":")), .malformed(.json))
        XCTAssertEqual(outcome(service, .login, json("[]")), .malformed(.request))
        XCTAssertEqual(
            outcome(service, .login, ServiceRequest(peer: "10.0.0.1", media: .form, body: Array("{}".utf8))),
            .malformed(.mediaType))
        XCTAssertEqual(
            outcome(service, .login, ServiceRequest(peer: "10.0.0.1", media: .json, bodyTooLarge: true)),
            .malformed(.bodyTooLarge))
        XCTAssertEqual(outcome(service, .login, json("{\"jwt\":\"a.b.c\"}")), .unverifiedToken)
        XCTAssertEqual(
            outcome(service, .accessToken, ServiceRequest(media: .form, body: Array("grant_type=password".utf8))),
            .malformed(.grantType))
        XCTAssertEqual(outcome(service, .policyCheck, json("{\"user\":\"alice\"}")), .badCredential(.hostToken))
        let hostToken = try store.createHostToken(host: "host1", now: clock.now())
        XCTAssertEqual(
            outcome(service, .policyCheck, json("{\"user\":\"Alice\"}", credential: hostToken)),
            .malformed(.userName("Alice", field: "user")))
        XCTAssertEqual(
            outcome(service, .policyCheck, json("{\"user\":\"alice\"}", credential: hostToken)),
            .policyAllows(rule: nil))
        XCTAssertEqual(outcome(service, .offlineSync, json("{}")), .notOffered)
        XCTAssertEqual(outcome(service, .health, ServiceRequest()), .health(storeAvailable: true))
    }

    func testAnAddressPastItsLimitIsToldWhenToComeBack() throws {
        var settings = ServiceSettings()
        settings.addressLimit = RateLimit(failures: 2, window: 60)
        let (service, _) = try makeService(settings)
        for _ in 0..<2 { XCTAssertEqual(outcome(service, .login, json("{\"jwt\":\"a.b.c\"}")), .unverifiedToken) }
        XCTAssertEqual(outcome(service, .login, json("{\"jwt\":\"a.b.c\"}")), .tooMany(retryAfter: 60))
        let (exchange, step) = service.start(.login, json("{\"jwt\":\"a.b.c\"}"), route: "/v1/login")
        guard case .outcomeAfterPause(.tooMany) = step else { return XCTFail("not held back: \(step)") }
        XCTAssertEqual(exchange.facts.reason, .code(.rateLimited))
    }
}

import FingerAuthDomain
import FingerAuthTransport
import FingerAuthWeb
import XCTest

/// How each of the service's outcomes is said on the wire (`AnswerMapping`), and which
/// operation a method and path ask for (`LoginAPI`): the transport's whole share of HTTP.
final class AnswerMappingTests: XCTestCase {
    func said(_ outcome: Outcome, _ operation: ServiceOperation = .login) -> String {
        let answer = AnswerMapping.answer(outcome, of: operation)
        let headers = answer.headers.map { " \($0.0): \($0.1)" }.joined()
        return "\(answer.status)\(headers) \(String(decoding: answer.body, as: UTF8.self))"
    }

    func testEachRefusalHasItsStatusAndError() {
        let expected: [(Outcome, String)] = [
            (.malformed(.bodyTooLarge), "413 {\"error\":\"body_too_large\"}"),
            (.malformed(.mediaType), "415 {\"error\":\"unsupported_media_type\"}"),
            (.malformed(.json), "400 {\"error\":\"invalid_json\"}"),
            (.malformed(.request), "400 {\"error\":\"invalid_request\"}"),
            (.malformed(.jwk), "400 {\"error\":\"invalid_jwk\"}"),
            (.malformed(.attestation), "400 {\"error\":\"invalid_attestation\"}"),
            (.malformed(.grantType), "400 {\"error\":\"unsupported_grant_type\"}"),
            (.unverifiedToken, "401 {\"error\":\"invalid_token\"}"),
            (.tokenRefused(.replayed), "401 {\"error\":\"replayed\"}"),
            (.proofRefused(.proof(.replayed)), "401 {\"error\":\"proof_replayed\"}"),
            (
                .badCredential(.hostToken),
                "401 WWW-Authenticate: Bearer realm=\"fingerauthd\" {\"error\":\"bad_host_token\"}"
            ),
            (
                .badCredential(.metricsToken),
                "401 WWW-Authenticate: Bearer realm=\"fingerauthd metrics\" {\"error\":\"unauthorized\"}"
            ),
            (.forbidden(.code(.hostMismatch)), "403 {\"error\":\"host_mismatch\"}"),
            (.forbidden(.attestation(.akInvalid)), "403 {\"error\":\"ak_invalid\"}"),
            (.policyDenied(rule: 7), "403 {\"error\":\"policy_denied\",\"rule\":7}"),
            (.policyDenied(rule: nil), "403 {\"error\":\"policy_denied\"}"),
            (.conflict(.token(.keyRevoked)), "409 {\"error\":\"key_revoked\"}"),
            (.unknownKey, "404 {\"error\":\"unknown_kid\"}"),
            (.notOffered, "404 {\"error\":\"not_found\"}"),
            (.tooMany(retryAfter: 42), "429 Retry-After: 42 {\"error\":\"rate_limited\"}"),
            (.tooManyChallenges, "429 {\"error\":\"too_many_challenges\"}"),
            (.unavailable, "503 {\"error\":\"unavailable\"}"),
        ]
        for (outcome, answer) in expected { XCTAssertEqual(said(outcome), answer, "\(outcome)") }
        XCTAssertTrue(
            said(.malformed(.userName("Alice", field: "sub")))
                .hasPrefix("400 {\"error\":\"invalid_request\",\"error_description\":\"sub is not a valid user name: "))
    }

    func testTheOAuthEndpointsRefuseTokensInOAuthsWords() {
        for operation in [ServiceOperation.accessToken, .introspect] {
            XCTAssertEqual(said(.unverifiedToken, operation), "400 {\"error\":\"invalid_grant\"}")
            XCTAssertEqual(
                said(.tokenRefused(.expired), operation),
                "400 {\"error\":\"invalid_grant\",\"error_description\":\"expired\"}")
            XCTAssertEqual(said(.unavailable, operation), "503 {\"error\":\"temporarily_unavailable\"}")
            // What is not the token's is said as everywhere.
            XCTAssertEqual(said(.malformed(.request), operation), "400 {\"error\":\"invalid_request\"}")
            XCTAssertEqual(said(.tooMany(retryAfter: 1), operation), "429 Retry-After: 1 {\"error\":\"rate_limited\"}")
        }
    }

    func testEachSuccessHasItsStatusAndBody() {
        XCTAssertEqual(
            said(.loggedIn(LoginAccepted(user: "alice", kid: "k", jti: "j", offline: nil))),
            "200 {\"ok\":true,\"sub\":\"alice\",\"kid\":\"k\",\"jti\":\"j\"}")
        XCTAssertEqual(
            said(
                .loggedIn(
                    LoginAccepted(
                        user: "a", kid: "k", jti: "j", offline: OfflineAllowance(grant: nil, keys: .array([]))))),
            "200 {\"ok\":true,\"sub\":\"a\",\"kid\":\"k\",\"jti\":\"j\",\"offline_grant\":null,\"grant_keys\":[]}")
        XCTAssertEqual(
            said(.registered(KeyRegistered(kid: "k", status: .pending, new: true, grantKeys: nil))),
            "201 {\"kid\":\"k\",\"status\":\"pending\"}")
        XCTAssertEqual(
            said(.registered(KeyRegistered(kid: "k", status: .active, new: false, grantKeys: nil))),
            "200 {\"kid\":\"k\",\"status\":\"active\"}")
        XCTAssertEqual(said(.revoked), "204 ")
        XCTAssertEqual(
            said(.accessTokenIssued(token: "t", lifetime: 300), .accessToken),
            "200 Pragma: no-cache {\"access_token\":\"t\",\"token_type\":\"Bearer\",\"expires_in\":300}")
        XCTAssertEqual(said(.introspected(nil), .introspect), "200 {\"active\":false}")
        XCTAssertEqual(said(.policyAllows(rule: nil)), "200 {\"allowed\":true,\"rule\":null}")
        XCTAssertEqual(said(.health(storeAvailable: true)), "200 {\"ok\":true,\"store\":\"available\"}")
        XCTAssertEqual(said(.health(storeAvailable: false)), "503 {\"ok\":false,\"store\":\"unavailable\"}")
        XCTAssertEqual(
            said(
                .offlineSynced(OfflineSyncReport(grants: [("g1", .live)], held: ["k2": [2], "k1": [1]], rejected: [:]))),
            "200 {\"grants\":{\"g1\":\"live\"},\"held\":{\"k1\":[1],\"k2\":[2]},\"rejected\":{}}")
        let metrics = AnswerMapping.answer(.metrics("x 1\n"), of: .metrics)
        XCTAssertEqual(metrics.contentType, "text/plain; version=0.0.4; charset=utf-8")
        XCTAssertEqual(metrics.body, Array("x 1\n".utf8))
    }

    func testRoutesFindTheOperationOrAnswerAtOnce() {
        XCTAssertEqual(LoginAPI.route(method: "POST", path: "/v1/login"), .operation(.login))
        XCTAssertEqual(LoginAPI.route(method: "POST", path: "/login"), .operation(.login))
        XCTAssertEqual(LoginAPI.route(method: "HEAD", path: "/healthz"), .operation(.health))
        XCTAssertEqual(LoginAPI.route(method: "DELETE", path: "/v1/keys/abc"), .operation(.revoke(kid: "abc")))
        XCTAssertEqual(LoginAPI.route(method: "GET", path: "/v1/keys/abc"), .operation(.keyStatus(kid: "abc")))
        XCTAssertEqual(LoginAPI.route(method: "POST", path: "/v1/keys/challenge"), .operation(.attestationChallenge))
        // The login helper's warm-up GET is answered before the service sees it.
        guard case let .answer(warmUp) = LoginAPI.route(method: "GET", path: "/v1/login") else {
            return XCTFail("the warm-up reached the service")
        }
        XCTAssertEqual(warmUp.status, 405)
        XCTAssertEqual(warmUp.headers.map { $0.0 + ": " + $0.1 }, ["Allow: POST"])
        XCTAssertEqual(
            LoginAPI.route(method: "PUT", path: "/v1/keys/x"), .answer(AnswerMapping.notAllowed("GET, DELETE")))
        XCTAssertEqual(LoginAPI.route(method: "GET", path: "/elsewhere"), .answer(AnswerMapping.notFound))
    }

    func testTheServiceReadsTheBearerCredentialAndTheDeclaredMedia() {
        var request = HTTPRequest(
            method: "POST", path: "/oauth2/token", authorization: "bearer  tok ",
            contentType: "Application/X-WWW-Form-Urlencoded; charset=utf-8", peer: "10.0.0.7")
        var read = LoginAPI.serviceRequest(request)
        XCTAssertEqual(read.credential, "tok")
        XCTAssertEqual(read.media, .form)
        XCTAssertEqual(read.peer, "10.0.0.7")
        request.authorization = "Basic dXNlcjpwYXNz"
        request.contentType = " application/json "
        read = LoginAPI.serviceRequest(request)
        XCTAssertNil(read.credential)
        XCTAssertEqual(read.media, .json)
        request.contentType = "application/jsonx"
        XCTAssertEqual(LoginAPI.serviceRequest(request).media, .other)
    }
}

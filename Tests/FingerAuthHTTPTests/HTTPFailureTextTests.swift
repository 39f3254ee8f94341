import FingerAuthHTTP
import FingerAuthLoginDomain
import XCTest

/// Each failure of the HTTP client: the kind it is filed under, whether that kind opens an
/// offline grant, and the sentence a person reads in the log (the project's words, not
/// libcurl's or OpenSSL's).
final class HTTPFailureTextTests: XCTestCase {
    func testOnlyTheNetworksWordIsEvidenceThatTheAuthenticatorCannotBeReached() {
        let evidence = AuthenticatorFailure.Kind.allCases.filter {
            AuthenticatorFailure(kind: $0, message: "").isNetworkEvidence
        }
        XCTAssertEqual(evidence, [.refused, .noRoute, .noSuchName, .nameServerFailed, .timeout])
    }

    func testEveryKindHasItsOwnName() {
        let names = AuthenticatorFailure.Kind.allCases.map(\.rawValue)
        XCTAssertEqual(
            names,
            [
                "refused", "no-route", "no-such-name", "name-server-failed", "timeout", "stalled", "local-error",
                "tls", "too-large", "bad-answer", "bad-url", "plain-http", "bad-header",
            ])
    }

    /// A local error is filed `local-error` whatever kind was asked: it is no evidence.
    func testConnectionsThatFailed() {
        let cases: [(AuthenticatorFailure.Kind, String, AuthenticatorFailure.Kind, String)] = [
            (.refused, "Connection refused", .refused, "auth.example port 8443 refused the connection"),
            (.noRoute, "No route to host", .noRoute, "no route to auth.example port 8443 (No route to host)"),
            (
                .local, "Cannot assign requested address", .local,
                "auth.example port 8443 not tried: Cannot assign requested address (an error of this host)"
            ),
            (
                .timeout, "Too many open files", .local,
                "auth.example port 8443 not tried: Too many open files (an error of this host)"
            ),
        ]
        for (asked, errorText, kind, why) in cases {
            let failure = HTTPFailure.connectFailed(kind: asked, host: "auth.example", port: 8443, errorText: errorText)
            XCTAssertEqual(failure, HTTPFailure(kind: kind, message: "cannot connect to the authenticator: " + why))
        }
    }

    func testLookups() {
        let cases: [(HTTPFailure.Lookup, AuthenticatorFailure.Kind, String)] = [
            (.noSuchName, .noSuchName, "(the name server answered: no such name)"),
            (.nameServerFailed(code: 2), .nameServerFailed, "(the name server answered: failure, code 2)"),
            (.noRoute("Network is unreachable"), .noRoute, "(no name server reachable: Network is unreachable)"),
            (.silent, .timeout, "(no name server answered in time)"),
            (
                .addressesElsewhere, .local,
                "(the name server gave addresses, the lookup here failed: an error of this host)"
            ),
            (.failedHere("Out of memory"), .local, "(Out of memory, an error of this host)"),
            (
                .notSent("Operation not permitted"), .local,
                "(the query could not leave this host: Operation not permitted, an error of this host)"
            ),
        ]
        for (lookup, kind, why) in cases {
            let failure = HTTPFailure.lookupFailed(host: "auth.example", lookup)
            XCTAssertEqual(failure.kind, kind, why)
            XCTAssertEqual(failure.message, "cannot connect to the authenticator: no address for auth.example " + why)
        }
    }

    func testTimeoutsSayWhatDidNotHappenInTime() {
        XCTAssertEqual(
            HTTPFailure.lookupTimedOut(host: "auth.example", milliseconds: 2000),
            HTTPFailure(
                kind: .timeout,
                message: "authenticator timed out: the name auth.example was not resolved within 2000 ms"))
        XCTAssertEqual(
            HTTPFailure.connectTimedOut(host: "auth.example", port: 443, milliseconds: 2001).message,
            "authenticator timed out: auth.example port 443 did not accept the connection within 2001 ms")
        XCTAssertEqual(
            HTTPFailure.answerTimedOut(milliseconds: 5000, received: 12),
            HTTPFailure(
                kind: .timeout, message: "authenticator timed out: no whole answer within 5000 ms (12 bytes received)"))
    }

    func testATimeoutTheProcessSleptThroughIsStalled() {
        let failure = HTTPFailure.stalled(.answerTimedOut(milliseconds: 3000, received: 0), stalledMilliseconds: 2500)
        XCTAssertEqual(failure.kind, .stalled)
        XCTAssertEqual(
            failure.message,
            "authenticator timed out: no whole answer within 3000 ms (0 bytes received); this process was kept from running for 2500 ms of it (frozen, stopped or starved): no evidence the authenticator is unreachable"
        )
    }

    func testCertificateProblemsInTheProjectsWords() {
        XCTAssertEqual(
            HTTPFailure.certificate(code: 10),
            HTTPFailure(
                kind: .tls,
                message:
                    "TLS failure with the authenticator: the certificate did not verify: the certificate has expired"))
        XCTAssertEqual(HTTPFailure.certificateProblem(code: 9), "the certificate is not yet valid")
        XCTAssertEqual(HTTPFailure.certificateProblem(code: 20), "its issuer is not a CA this host trusts (cafile)")
        XCTAssertEqual(HTTPFailure.certificateProblem(code: 18), "it is self-signed and not trusted here")
        XCTAssertEqual(HTTPFailure.certificateProblem(code: 62), "it is not for this host name")
        XCTAssertEqual(HTTPFailure.certificateProblem(code: 999), "verification error 999")
    }

    func testAPinMismatchIsATLSFailure() {
        XCTAssertEqual(
            HTTPFailure.pinMismatch,
            HTTPFailure(
                kind: .tls,
                message:
                    "TLS failure with the authenticator: the server's public key is not the pinned one (pinned_pubkey)")
        )
    }

    func testAnswersThatAreWrongOrTooLarge() {
        XCTAssertEqual(
            HTTPFailure.tooLarge(limit: 16384),
            HTTPFailure(
                kind: .tooLarge,
                message: "request to the authenticator failed: answer larger than 16384 bytes (too large)"))
        XCTAssertEqual(
            HTTPFailure.badAnswer("the answer was cut off"),
            HTTPFailure(kind: .badAnswer, message: "request to the authenticator failed: the answer was cut off"))
    }

    func testRequestsNeverSentSayWhy() {
        XCTAssertEqual(HTTPFailure.badURL("no host").kind, .badURL)
        XCTAssertEqual(HTTPFailure.badURL("no host").message, "request not sent: bad URL: no host")
        XCTAssertEqual(HTTPFailure.plainHTTP.kind, .plainHTTP)
        XCTAssertEqual(HTTPFailure.plainHTTP.message, "request not sent: an http:// URL needs allow_http")
        XCTAssertEqual(HTTPFailure.badHeader.kind, .badHeader)
        XCTAssertEqual(HTTPFailure.badHeader.message, "request not sent: a request header holds a line break")
    }

    /// The client itself files what it refuses to send: no socket is opened for these.
    func testTheClientFilesWhatItRefusesToSend() {
        let connection = HTTPConnection(settings: HTTPSettings())
        func kind(_ url: String, headers: [String] = []) -> AuthenticatorFailure.Kind? {
            guard case let .failure(failure) = connection.send(method: "GET", url: url, body: nil, headers: headers)
            else { return nil }
            return failure.kind
        }
        XCTAssertEqual(kind("ftp://auth.example/"), .badURL)
        XCTAssertEqual(kind("http://127.0.0.1:9/v1/login"), .plainHTTP)
        XCTAssertEqual(kind("https://127.0.0.1:9/v1/login", headers: ["X-A: 1\r\nX-B: 2"]), .badHeader)
    }
}

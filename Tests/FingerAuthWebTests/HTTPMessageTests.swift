import FingerAuthWeb
import XCTest

/// HTTP's answer as a value: the body each initializer makes, and what equality compares.
final class HTTPMessageTests: XCTestCase {
    func testAnErrorIsItsCodeInOneJSONMember() {
        let answer = HTTPResponse.error(429, "rate_limited", headers: [("Retry-After", "9")])
        XCTAssertEqual(answer.status, 429)
        XCTAssertEqual(String(decoding: answer.body, as: UTF8.self), "{\"error\":\"rate_limited\"}")
        XCTAssertEqual(answer.contentType, "application/json")
        XCTAssertEqual(answer.headers.map { $0.0 + ": " + $0.1 }, ["Retry-After: 9"])
    }

    func testNoJSONIsAnEmptyBodyAndTextKeepsItsType() {
        XCTAssertEqual(HTTPResponse(status: 204, json: nil).body, [])
        let text = HTTPResponse(status: 200, text: "a 1\n", contentType: "text/plain")
        XCTAssertEqual(text.body, Array("a 1\n".utf8))
        XCTAssertEqual(text.contentType, "text/plain")
    }

    func testEqualityComparesStatusBodyTypeAndHeadersInOrder() {
        let one = HTTPResponse.error(405, "method_not_allowed", headers: [("Allow", "GET")])
        XCTAssertEqual(one, HTTPResponse.error(405, "method_not_allowed", headers: [("Allow", "GET")]))
        XCTAssertNotEqual(one, HTTPResponse.error(405, "method_not_allowed", headers: [("Allow", "POST")]))
        XCTAssertNotEqual(one, HTTPResponse.error(404, "method_not_allowed", headers: [("Allow", "GET")]))
        XCTAssertNotEqual(
            HTTPResponse(status: 200, body: [1], contentType: "a/b"),
            HTTPResponse(status: 200, body: [1], contentType: "a/c"))
    }

    func testARequestStartsWithoutTheConsolesHeaders() {
        let request = HTTPRequest(method: "GET", path: "/")
        XCTAssertNil(request.cookie)
        XCTAssertNil(request.origin)
        XCTAssertEqual(request.query, [:])
        XCTAssertEqual(request.peer, "-")
    }
}

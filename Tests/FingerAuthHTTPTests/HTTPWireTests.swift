import FingerAuthCore
import FingerAuthHTTP
import FingerAuthLoginDomain
import XCTest

/// The client's HTTP/1.1 framing: what it writes, and how it reads an answer that arrives in
/// pieces, is cut short, is too large, or carries more than one answer.
final class HTTPWireTests: XCTestCase {
    private func url(_ text: String) throws -> AuthenticatorURL {
        try AuthenticatorURL.parse(text).get()
    }

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    private func parse(_ text: String, ended: Bool = false, method: String = "POST", limit: Int = 64) -> HTTPWire.Parse
    {
        HTTPWire.parse(bytes(text), ended: ended, method: method, limit: limit)
    }

    func testAPostCarriesItsLengthAndBodyAndAGetNeither() throws {
        let login = try url("https://auth.example:8443/v1/login?x=1")
        let post = String(
            decoding: HTTPWire.request(method: "POST", url: login, body: bytes("{}"), headers: ["A: b"]),
            as: UTF8.self)
        XCTAssertTrue(post.hasPrefix("POST /v1/login?x=1 HTTP/1.1\r\nHost: auth.example:8443\r\n"), post)
        XCTAssertTrue(post.contains("\r\nContent-Type: application/json\r\nContent-Length: 2\r\nA: b\r\n\r\n{}"), post)
        let get = String(decoding: HTTPWire.request(method: "GET", url: login, body: nil, headers: []), as: UTF8.self)
        XCTAssertFalse(get.contains("Content-Length"), get)
        XCTAssertTrue(get.hasSuffix("\r\n\r\n"), get)
        XCTAssertEqual(HTTPWire.target(of: try url("https://h")), "/")
        XCTAssertEqual(HTTPWire.target(of: try url("https://h?q")), "/?q")
        XCTAssertEqual(HTTPWire.hostHeader(of: try url("https://[::1]:9/p")), "[::1]:9")
        XCTAssertEqual(HTTPWire.hostHeader(of: try url("https://h/p")), "h")
    }

    func testAnAnswerIsCompleteOnlyWithItsWholeBody() {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: Sat, 05 Dec 2026 11:00:00 GMT\r\n\r\n"
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nContent-Len"), .incomplete)
        XCTAssertEqual(parse(head + "ab"), .incomplete)
        XCTAssertEqual(parse(head + "ab", ended: true), .invalid("answer ended early"))
        XCTAssertEqual(
            parse(head + "abcde"),
            .complete(status: 200, body: bytes("abcde"), date: "Sat, 05 Dec 2026 11:00:00 GMT", keepAlive: true))
    }

    func testBytesAfterTheBodyOrConnectionCloseEndTheConnection() {
        let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        XCTAssertEqual(
            parse(answer + "HTTP/1.1 200 OK\r\n"),
            .complete(status: 200, body: bytes("ok"), date: nil, keepAlive: false))
        XCTAssertEqual(
            parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"),
            .complete(status: 200, body: bytes("ok"), date: nil, keepAlive: false))
        XCTAssertEqual(parse("HTTP/1.0 200 OK\r\n\r\nto the end"), .incomplete)
        XCTAssertEqual(
            parse("HTTP/1.0 200 OK\r\n\r\nto the end", ended: true),
            .complete(status: 200, body: bytes("to the end"), date: nil, keepAlive: false))
    }

    func testAChunkedBodyIsJoinedAndBounded() {
        let chunked =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n"
        XCTAssertEqual(parse(chunked), .complete(status: 200, body: bytes("abcde"), date: nil, keepAlive: true))
        XCTAssertEqual(parse(String(chunked.dropLast(2))), .incomplete)
        XCTAssertEqual(parse(String(chunked.dropLast(2)), ended: true), .invalid("answer ended inside a chunk"))
        XCTAssertEqual(parse(chunked, limit: 4), .tooLarge)
        XCTAssertEqual(
            parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            .invalid("malformed chunked body"))
        XCTAssertEqual(
            parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n"),
            .invalid("malformed chunked body"))
        // a sign is no hex digit (a negative size made a range that trapped: fuzzing found it)
        for size in ["-d", "+3", " -1", "0x3"] {
            let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size + "\r\nabc\r\n0\r\n\r\n"
            XCTAssertEqual(parse(answer), .invalid("malformed chunked body"), size)
        }
    }

    func testWhatIsNotAPlainHTTPAnswerIsRefused() {
        XCTAssertEqual(parse("SSH-2.0-OpenSSH\r\n\r\n"), .invalid("not an HTTP/1.x answer"))
        XCTAssertEqual(parse("HTTP/1.1 99 X\r\n\r\n"), .invalid("not an HTTP/1.x answer"))
        XCTAssertEqual(parse("HTTP/1.1 100 Continue\r\n\r\n"), .invalid("informational answer 100"))
        XCTAssertEqual(
            parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"),
            .invalid("bad Content-Length"))
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), .invalid("bad Content-Length"))
        XCTAssertEqual(
            parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
            .invalid("unsupported Transfer-Encoding"))
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"), .invalid("malformed header"))
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n"), .tooLarge)
        let huge = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: HTTPWire.maxHeadBytes)
        XCTAssertEqual(parse(huge), .invalid("answer head larger than 16384 bytes"))
        XCTAssertEqual(
            parse("HTTP/1.1 204 No Content\r\n\r\n"),
            .complete(status: 204, body: [], date: nil, keepAlive: true))
    }
}

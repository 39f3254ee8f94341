import FingerAuthHTTP
import XCTest

/// Reading an answer as it arrives: chunk lines (extensions) and trailers are bounded like
/// the head, and an answer dribbled in a byte at a time costs work linear in its size.
final class HTTPAnswerReaderTests: XCTestCase {
    private let chunkedHead = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)

    private func read(_ bytes: [UInt8], limit: Int = 64, step: Int? = nil) -> (HTTPWire.Parse, HTTPAnswerReader) {
        var reader = HTTPAnswerReader(method: "POST", limit: limit)
        var result = HTTPWire.Parse.incomplete
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + (step ?? bytes.count))
            reader.append(bytes[at..<end])
            at = end
            result = reader.result(ended: false)
            if result != .incomplete { break }
        }
        return (result, reader)
    }

    func testAnOversizedTrailerIsRefusedAsTooLargeBeforeItEnds() {
        let trailer = Array("X-Pad: ".utf8) + [UInt8](repeating: 97, count: 1 << 20) + Array("\r\n\r\n".utf8)
        let answer = chunkedHead + Array("2\r\nok\r\n0\r\n".utf8) + trailer
        let (result, reader) = read(answer, step: 4096)
        XCTAssertEqual(result, .framingTooLarge("trailers over 16384 bytes"))
        // Refused once the bound was passed, not after the megabyte.
        XCTAssertLessThan(reader.received, 16384 + 8192)
        // Many small trailer lines count together.
        let lines = (0..<2000).map { _ in "T: vvvvvvvv\r\n" }.joined()
        XCTAssertEqual(
            read(chunkedHead + Array("0\r\n\(lines)\r\n".utf8)).0, .framingTooLarge("trailers over 16384 bytes"))
        // A trailer under the bound is read and skipped.
        XCTAssertEqual(
            read(chunkedHead + Array("2\r\nok\r\n0\r\nA: b\r\n\r\n".utf8)).0,
            .complete(status: 200, body: Array("ok".utf8), date: nil, keepAlive: true))
    }

    func testAnOversizedChunkExtensionIsRefusedAsTooLarge() {
        let extensionBytes = Array(";name=".utf8) + [UInt8](repeating: 120, count: 100_000)
        let answer = chunkedHead + Array("2".utf8) + extensionBytes + Array("\r\nok\r\n0\r\n\r\n".utf8)
        let (result, reader) = read(answer, step: 512)
        XCTAssertEqual(result, .framingTooLarge("chunk line (extensions) over 1024 bytes"))
        XCTAssertLessThan(reader.received, 4096)
        // An extension within the bound is fine.
        let small = chunkedHead + Array("2;a=\(String(repeating: "b", count: 900))\r\nok\r\n0\r\n\r\n".utf8)
        XCTAssertEqual(read(small).0, .complete(status: 200, body: Array("ok".utf8), date: nil, keepAlive: true))
    }

    func testAnAnswerDribbledAByteAtATimeCostsLinearWork() {
        // 64 KB of body in chunks of 1 to 100 bytes, a head, a trailer: fed one byte per read.
        var answer = Array("HTTP/1.1 200 OK\r\nDate: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var body: [UInt8] = []
        var size = 1
        while body.count < 64 * 1024 {
            let part = [UInt8](repeating: UInt8(65 + size % 26), count: size)
            answer += Array(String(size, radix: 16).utf8) + Array(";e=1\r\n".utf8) + part + [13, 10]
            body += part
            size = size % 100 + 1
        }
        answer += Array("0\r\nT: v\r\n\r\n".utf8)
        let (result, reader) = read(answer, limit: 1 << 20, step: 1)
        XCTAssertEqual(result, .complete(status: 200, body: body, date: "x", keepAlive: true))
        XCTAssertEqual(reader.received, answer.count)
        // Each byte is looked at a few times at most (the old parse looked at all of them on
        // every read: about answer.count² / 2).
        XCTAssertLessThanOrEqual(reader.work, 6 * answer.count, "work \(reader.work) for \(answer.count) bytes")
        // The same for a Content-Length body and for one that ends with the stream.
        let sized = Array("HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n".utf8) + [UInt8](repeating: 7, count: 65536)
        let (sizedResult, sizedReader) = read(sized, limit: 1 << 20, step: 1)
        XCTAssertEqual(
            sizedResult, .complete(status: 200, body: [UInt8](repeating: 7, count: 65536), date: nil, keepAlive: true))
        XCTAssertLessThanOrEqual(sizedReader.work, 6 * sized.count)
    }
}

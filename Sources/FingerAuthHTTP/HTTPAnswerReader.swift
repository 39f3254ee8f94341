import FingerAuthCore

/// An HTTP/1.1 answer read as its bytes arrive (`HTTPWire.parse` reads one from bytes at
/// hand). Each step resumes where the last stopped, so an answer dribbled in a byte at a
/// time costs work linear in its size (`work` counts the bytes looked at), and every part
/// is bounded: the head (`HTTPWire.maxHeadBytes`), the body (`limit`), each chunk's size
/// line with its extensions (`maxChunkLineBytes`) and the trailers (`maxTrailerBytes`).
package struct HTTPAnswerReader: Sendable {
    /// The longest chunk-size line, extensions included.
    package static let maxChunkLineBytes = 1024
    /// The largest trailer section, as for the head.
    package static let maxTrailerBytes = HTTPWire.maxHeadBytes

    private let method: String
    private let limit: Int
    private var data: [UInt8] = []
    /// Bytes looked at so far by the parse: at most a small multiple of `received`.
    package private(set) var work = 0
    private var state = State.head(scanned: 0)
    private var status = 0
    private var date: String?
    private var close = false
    private var body: [UInt8] = []

    private enum State: Sendable {
        case head(scanned: Int)
        case sized(start: Int, length: Int)
        case untilEnd(start: Int)
        case chunkLine(start: Int, scanned: Int)
        case chunkData(start: Int, size: Int)
        case trailer(start: Int, scanned: Int, sectionStart: Int)
        case finished(HTTPWire.Parse)
    }

    package init(method: String, limit: Int) {
        self.method = method
        self.limit = limit
    }

    /// Bytes received so far.
    package var received: Int { data.count }

    /// Adds bytes that arrived.
    package mutating func append<S: Sequence>(_ bytes: S) where S.Element == UInt8 { data.append(contentsOf: bytes) }

    /// How far the answer has arrived; `ended` when the stream has ended after the bytes
    /// appended so far.
    package mutating func result(ended: Bool) -> HTTPWire.Parse {
        while true {
            switch state {
            case let .finished(parse): return parse
            case let .head(scanned):
                guard let end = find(crlfcrlf, from: max(0, scanned - 3)) else {
                    state = .head(scanned: data.count)
                    return data.count > HTTPWire.maxHeadBytes
                        ? finish(.invalid("answer head larger than \(HTTPWire.maxHeadBytes) bytes")) : .incomplete
                }
                guard end <= HTTPWire.maxHeadBytes else {
                    return finish(.invalid("answer head larger than \(HTTPWire.maxHeadBytes) bytes"))
                }
                if let done = readHead(end: end) { return finish(done) }
            case let .sized(start, length):
                let have = data.count - start
                if have < length { return ended ? finish(.invalid("answer ended early")) : .incomplete }
                // Bytes past the body would be read as the next answer: such a connection is not kept.
                return finish(
                    .complete(
                        status: status, body: Array(data[start..<(start + length)]), date: date,
                        keepAlive: !close && have == length))
            case let .untilEnd(start):
                if data.count - start > limit { return finish(.tooLarge) }
                return ended
                    ? finish(.complete(status: status, body: Array(data[start...]), date: date, keepAlive: false))
                    : .incomplete
            case let .chunkLine(start, scanned):
                guard let end = find(crlf, from: max(start, scanned - 1)) else {
                    state = .chunkLine(start: start, scanned: data.count)
                    if data.count - start > HTTPAnswerReader.maxChunkLineBytes {
                        return finish(
                            .framingTooLarge("chunk line (extensions) over \(HTTPAnswerReader.maxChunkLineBytes) bytes")
                        )
                    }
                    return ended ? finish(.invalid("answer ended inside a chunk")) : .incomplete
                }
                guard end - start <= HTTPAnswerReader.maxChunkLineBytes else {
                    return finish(
                        .framingTooLarge("chunk line (extensions) over \(HTTPAnswerReader.maxChunkLineBytes) bytes"))
                }
                let sizeText = String(decoding: data[start..<end], as: UTF8.self).prefix(while: { $0 != ";" })
                    .trimmingSpaces()
                // Hex digits only: Int(_:radix:) also takes a sign, and a negative size would
                // make a range that traps (found by the http-answer fuzz target).
                guard !sizeText.isEmpty, sizeText.count <= 8, sizeText.utf8.allSatisfy(isASCIIHexDigit),
                    let size = Int(sizeText, radix: 16)
                else { return finish(.invalid("malformed chunked body")) }
                if size == 0 {
                    state = .trailer(start: end + 2, scanned: end + 2, sectionStart: end + 2)
                } else {
                    guard size <= limit - body.count else { return finish(.tooLarge) }
                    state = .chunkData(start: end + 2, size: size)
                }
            case let .chunkData(start, size):
                guard data.count - start >= size + 2 else {
                    return ended ? finish(.invalid("answer ended inside a chunk")) : .incomplete
                }
                work &+= size + 2
                guard data[start + size] == 13, data[start + size + 1] == 10 else {
                    return finish(.invalid("malformed chunked body"))
                }
                body += data[start..<(start + size)]
                state = .chunkLine(start: start + size + 2, scanned: start + size + 2)
            case let .trailer(start, scanned, sectionStart):
                guard let end = find(crlf, from: max(start, scanned - 1)) else {
                    state = .trailer(start: start, scanned: data.count, sectionStart: sectionStart)
                    if data.count - sectionStart > HTTPAnswerReader.maxTrailerBytes {
                        return finish(.framingTooLarge("trailers over \(HTTPAnswerReader.maxTrailerBytes) bytes"))
                    }
                    return ended ? finish(.invalid("answer ended inside a chunk")) : .incomplete
                }
                guard end + 2 - sectionStart <= HTTPAnswerReader.maxTrailerBytes else {
                    return finish(.framingTooLarge("trailers over \(HTTPAnswerReader.maxTrailerBytes) bytes"))
                }
                if end == start {
                    return finish(
                        .complete(status: status, body: body, date: date, keepAlive: !close && end + 2 == data.count))
                }
                state = .trailer(start: end + 2, scanned: end + 2, sectionStart: sectionStart)
            }
        }
    }

    private mutating func finish(_ parse: HTTPWire.Parse) -> HTTPWire.Parse {
        state = .finished(parse)
        return parse
    }

    /// The status line and headers, `data[..<end]`; sets the state for the body, or says
    /// why the answer is no good.
    private mutating func readHead(end: Int) -> HTTPWire.Parse? {
        work &+= end
        let head = String(decoding: data[..<end], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).makeIterator()
        guard let statusLine = lines.next() else { return .invalid("no status line") }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", parts[1].count == 3,
            let code = Int(parts[1]), (100...599).contains(code)
        else {
            return .invalid("not an HTTP/1.x answer")
        }
        var length: Int?
        var chunked = false
        close = parts[0] == "HTTP/1.0"
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: ":") else { return .invalid("malformed header") }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            switch name {
            case "content-length":
                guard let n = Int(value), n >= 0, length == nil || length == n else {
                    return .invalid("bad Content-Length")
                }
                length = n
            case "transfer-encoding":
                guard value.lowercased() == "chunked" else { return .invalid("unsupported Transfer-Encoding") }
                chunked = true
            case "connection":
                if value.lowercased().contains("close") { close = true }
                if parts[0] == "HTTP/1.0" && value.lowercased().contains("keep-alive") { close = false }
            case "date": date = value
            default: break
            }
        }
        // 1xx answers are not expected: the client never sends `Expect`.
        guard code >= 200 else { return .invalid("informational answer \(code)") }
        status = code
        let bodyStart = end + 4
        if method == "HEAD" || code == 204 || code == 304 {
            return .complete(status: code, body: [], date: date, keepAlive: !close)
        }
        if chunked {
            state = .chunkLine(start: bodyStart, scanned: bodyStart)
        } else if let length {
            if length > limit { return .tooLarge }
            state = .sized(start: bodyStart, length: length)
        } else {
            state = .untilEnd(start: bodyStart)
        }
        return nil
    }

    private let crlf: [UInt8] = [13, 10]
    private let crlfcrlf: [UInt8] = [13, 10, 13, 10]

    /// Where `needle` first occurs in the data at or after `from`; counts the bytes looked at.
    private mutating func find(_ needle: [UInt8], from: Int) -> Int? {
        guard from < data.count else { return nil }
        let found = HTTPWire.find(needle, in: data[from...])
        work &+= (found ?? data.count) - from
        return found
    }
}

/// 0-9, a-f, A-F.
func isASCIIHexDigit(_ byte: UInt8) -> Bool {
    (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
}

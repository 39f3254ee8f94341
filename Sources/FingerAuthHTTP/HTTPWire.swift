import FingerAuthCore

/// HTTP/1.1 on the wire, as much as the client needs: a request's bytes, and an answer
/// read from bytes that arrive in pieces (status line, headers, a body delimited by
/// `Content-Length`, chunked, or the end of the stream).
public enum HTTPWire {
    /// The largest status line plus headers read.
    public static let maxHeadBytes = 16 * 1024

    /// The request's head and body. `path` is the URL from its path on (`/` when empty).
    public static func request(method: String, url: AuthenticatorURL, body: [UInt8]?, headers: [String]) -> [UInt8] {
        let sendsBody = method == "POST" || (method != "GET" && body != nil)
        var lines = [
            "\(method) \(target(of: url)) HTTP/1.1", "Host: \(hostHeader(of: url))",
            "User-Agent: fingerauth/0.1", "Accept: application/json",
        ]
        if sendsBody {
            lines.append("Content-Type: application/json")
            lines.append("Content-Length: \((body ?? []).count)")
        }
        lines += headers
        var bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        if sendsBody { bytes += body ?? [] }
        return bytes
    }

    /// The URL's path and query: what follows the authority.
    public static func target(of url: AuthenticatorURL) -> String {
        let afterScheme = url.text.drop(while: { $0 != ":" }).dropFirst(3)
        let path = afterScheme.drop(while: { $0 != "/" && $0 != "?" })
        if path.isEmpty { return "/" }
        return path.hasPrefix("?") ? "/" + path : String(path)
    }

    /// The `Host` header's value: the host (IPv6 in brackets) and the port written in the URL.
    public static func hostHeader(of url: AuthenticatorURL) -> String {
        let host = url.host.contains(":") ? "[\(url.host)]" : url.host
        return url.port.map { "\(host):\($0)" } ?? host
    }

    /// How far an answer has arrived.
    public enum Parse: Equatable, Sendable {
        case incomplete
        case invalid(String)
        case tooLarge
        /// The answer, and whether the connection may carry another request.
        case complete(status: Int, body: [UInt8], date: String?, keepAlive: Bool)
    }

    /// Parses `data` received so far; `ended` when the stream has ended after it.
    /// `method` tells whether a body follows (not for HEAD); `limit` caps the body.
    public static func parse(_ data: [UInt8], ended: Bool, method: String, limit: Int) -> Parse {
        guard let headEnd = find([13, 10, 13, 10], in: data) else {
            return data.count > maxHeadBytes ? .invalid("answer head larger than \(maxHeadBytes) bytes") : .incomplete
        }
        guard headEnd <= maxHeadBytes else { return .invalid("answer head larger than \(maxHeadBytes) bytes") }
        let head = String(decoding: data[..<headEnd], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).makeIterator()
        guard let statusLine = lines.next() else { return .invalid("no status line") }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", parts[1].count == 3,
            let status = Int(parts[1]), (100...599).contains(status)
        else {
            return .invalid("not an HTTP/1.x answer")
        }
        var length: Int?
        var chunked = false
        var close = parts[0] == "HTTP/1.0"
        var date: String?
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
        guard status >= 200 else { return .invalid("informational answer \(status)") }
        let bodyStart = headEnd + 4
        let rest = data[bodyStart...]
        if method == "HEAD" || status == 204 || status == 304 {
            return .complete(status: status, body: [], date: date, keepAlive: !close)
        }
        if chunked {
            switch dechunk(rest, limit: limit) {
            case .incomplete: return ended ? .invalid("answer ended inside a chunk") : .incomplete
            case .tooLarge: return .tooLarge
            case .invalid: return .invalid("malformed chunked body")
            case let .done(body, end):
                return .complete(status: status, body: body, date: date, keepAlive: !close && end == rest.endIndex)
            }
        }
        if let length {
            if length > limit { return .tooLarge }
            if rest.count < length { return ended ? .invalid("answer ended early") : .incomplete }
            // Bytes past the body would be read as the next answer: such a connection is not kept.
            return .complete(
                status: status, body: Array(rest.prefix(length)), date: date,
                keepAlive: !close && rest.count == length)
        }
        if rest.count > limit { return .tooLarge }
        return ended ? .complete(status: status, body: Array(rest), date: date, keepAlive: false) : .incomplete
    }

    private enum Dechunk {
        case incomplete, invalid, tooLarge
        /// The body, and where it ended in the data.
        case done([UInt8], end: Int)
    }

    /// A chunked body (RFC 9112 §7.1), trailers skipped.
    private static func dechunk(_ data: ArraySlice<UInt8>, limit: Int) -> Dechunk {
        var body: [UInt8] = []
        var at = data.startIndex
        while true {
            guard let lineEnd = find([13, 10], in: data[at...]) else { return .incomplete }
            let sizeText = String(decoding: data[at..<lineEnd], as: UTF8.self).prefix(while: { $0 != ";" })
                .trimmingSpaces()
            // Hex digits only: Int(_:radix:) also takes a sign, and a negative size would
            // make a range that traps (found by the http-answer fuzz target).
            guard !sizeText.isEmpty, sizeText.count <= 8, sizeText.utf8.allSatisfy(isASCIIHexDigit),
                let size = Int(sizeText, radix: 16)
            else {
                return .invalid
            }
            at = lineEnd + 2
            if size == 0 {
                // trailers, then an empty line
                while true {
                    guard let end = find([13, 10], in: data[at...]) else { return .incomplete }
                    if end == at { return .done(body, end: end + 2) }
                    at = end + 2
                }
            }
            guard size <= limit - body.count else { return .tooLarge }
            guard data.endIndex - at >= size + 2 else { return .incomplete }
            body += data[at..<(at + size)]
            at += size
            guard data[at] == 13, data[at + 1] == 10 else { return .invalid }
            at += 2
        }
    }

    /// Index of the first occurrence of `needle` in `haystack`.
    static func find<C: RandomAccessCollection>(_ needle: [UInt8], in haystack: C) -> C.Index?
    where C.Element == UInt8 {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        let last = haystack.index(haystack.endIndex, offsetBy: -needle.count)
        while index <= last {
            if haystack[index] == needle[0] {
                var match = true
                var probe = index
                for byte in needle {
                    if haystack[probe] != byte {
                        match = false
                        break
                    }
                    probe = haystack.index(after: probe)
                }
                if match { return index }
            }
            index = haystack.index(after: index)
        }
        return nil
    }
}

/// 0-9, a-f, A-F.
private func isASCIIHexDigit(_ byte: UInt8) -> Bool {
    (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}

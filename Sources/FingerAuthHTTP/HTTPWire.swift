import FingerAuthCore
import FingerAuthLoginDomain

/// HTTP/1.1 on the wire, as much as the client needs: a request's bytes, and an answer
/// read from bytes that arrive in pieces (status line, headers, a body delimited by
/// `Content-Length`, chunked, or the end of the stream).
package enum HTTPWire {
    /// The largest status line plus headers read.
    package static let maxHeadBytes = 16 * 1024

    /// The request's head and body. `path` is the URL from its path on (`/` when empty).
    package static func request(method: String, url: AuthenticatorURL, body: [UInt8]?, headers: [String]) -> [UInt8] {
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
    package static func target(of url: AuthenticatorURL) -> String {
        let afterScheme = url.text.drop(while: { $0 != ":" }).dropFirst(3)
        let path = afterScheme.drop(while: { $0 != "/" && $0 != "?" })
        if path.isEmpty { return "/" }
        return path.hasPrefix("?") ? "/" + path : String(path)
    }

    /// The `Host` header's value: the host (IPv6 in brackets) and the port written in the URL.
    package static func hostHeader(of url: AuthenticatorURL) -> String {
        let host = url.host.contains(":") ? "[\(url.host)]" : url.host
        return url.port.map { "\(host):\($0)" } ?? host
    }

    /// How far an answer has arrived.
    package enum Parse: Equatable, Sendable {
        case incomplete
        case invalid(String)
        /// The body is larger than the limit.
        case tooLarge
        /// A chunk's size line (with its extensions) or the trailers are larger than their bounds.
        case framingTooLarge(String)
        /// The answer, and whether the connection may carry another request.
        case complete(status: Int, body: [UInt8], date: String?, keepAlive: Bool)
    }

    /// Parses `data` received so far; `ended` when the stream has ended after it.
    /// `method` tells whether a body follows (not for HEAD); `limit` caps the body.
    /// (`HTTPAnswerReader` reads an answer as it arrives.)
    package static func parse(_ data: [UInt8], ended: Bool, method: String, limit: Int) -> Parse {
        var reader = HTTPAnswerReader(method: method, limit: limit)
        reader.append(data)
        return reader.result(ended: ended)
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

extension StringProtocol {
    func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}

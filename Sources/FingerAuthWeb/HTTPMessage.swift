import FingerAuthCore

/// A request as the transport read it, free of libmicrohttpd types: what the login API
/// makes a `ServiceRequest` of, and what the admin console reads.
package struct HTTPRequest: Sendable {
    package var method: String
    /// The path, without the query string.
    package var path: String
    /// The `Authorization` header, if any. Secret: never logged.
    package var authorization: String?
    package var contentType: String?
    package var body: [UInt8]
    /// True when the body went past the cap and was discarded.
    package var bodyTooLarge: Bool
    /// The client's address as every limit, the audit row and the log line count it: the
    /// transport resolves it (`ClientAddress`: the TCP peer, or behind a trusted proxy the
    /// client that proxy names; an IPv6 client by its /64).
    package var peer: String
    /// The `Cookie` header (the admin console only). Secret: never logged.
    package var cookie: String?
    /// The `Origin` header (the admin console only).
    package var origin: String?
    /// The query string's parameters the console reads, still percent-encoded (the
    /// console only; the login listener never looks).
    package var query: [String: String] = [:]

    package init(
        method: String, path: String, authorization: String? = nil, contentType: String? = nil,
        body: [UInt8] = [], bodyTooLarge: Bool = false, peer: String = "-"
    ) {
        self.method = method
        self.path = path
        self.authorization = authorization
        self.contentType = contentType
        self.body = body
        self.bodyTooLarge = bodyTooLarge
        self.peer = peer
    }
}

/// An answer: status, body (JSON unless said otherwise; may be empty), extra headers.
package struct HTTPResponse: Sendable, Equatable {
    package var status: Int
    package var body: [UInt8]
    package var headers: [(String, String)]
    /// The `Content-Type` sent with a non-empty body.
    package var contentType: String

    package init(status: Int, json: JSONValue?, headers: [(String, String)] = []) {
        self.status = status
        self.body = json.map { JSONEncoding.encodeBytes($0) } ?? []
        self.headers = headers
        self.contentType = "application/json"
    }

    /// An HTML page or another body of `contentType` (the admin console).
    package init(status: Int, body: [UInt8], contentType: String, headers: [(String, String)] = []) {
        self.status = status
        self.body = body
        self.headers = headers
        self.contentType = contentType
    }

    /// A plain-text answer (`/metrics`).
    package init(status: Int, text: String, contentType: String) {
        self.status = status
        self.body = Array(text.utf8)
        self.headers = []
        self.contentType = contentType
    }

    /// `{"error": code}` with `status`.
    package static func error(_ status: Int, _ code: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, json: .object([("error", .string(code))]), headers: headers)
    }

    package static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.contentType == rhs.contentType
            && lhs.headers.map { $0.0 + ":" + $0.1 } == rhs.headers.map { $0.0 + ":" + $0.1 }
    }
}

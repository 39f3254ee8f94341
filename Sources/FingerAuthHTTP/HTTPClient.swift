import CLibSSL
import FingerAuthCore
import FingerAuthSystem

/// How to reach the authenticator: TLS settings and the bounds on every request.
public struct HTTPSettings: Sendable {
    public var allowHTTP = false
    public var caFile: String?
    public var pinnedPublicKey: String?
    public var connectTimeoutMilliseconds = 2000
    public var totalTimeoutMilliseconds = 5000
    public var maxResponseBytes = 16 * 1024
    /// A root-only directory where the TLS session of the last connection is kept for the
    /// next process (`SessionCache`); nil: kept in memory only.
    public var sessionDirectory: String?

    public init() {}

    /// The settings the configuration gives (`cafile`, `pinned_pubkey`, `allow_http`).
    public init(options: Options) {
        allowHTTP = options.allowHTTP
        caFile = options.caFile
        pinnedPublicKey = options.pinnedPublicKey
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    /// The `Date` header's value, when the server sent one (clock-skew checks).
    public var date: String?
}

/// Why no answer came; the text is for logs and people, free of secrets.
public struct HTTPFailure: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case refused, timeout, tls, tooLarge, other }
    public var kind: Kind
    public var message: String
    public var description: String { message }
}

/// One HTTP request, hardened for use by the helper and the command line: no redirects,
/// no proxy, nothing read from the environment, peer and host verified, bounded time and
/// size.
public enum HTTPClient {
    public static func send(
        method: String, url: String, body: [UInt8]?, headers: [String] = [],
        settings: HTTPSettings
    ) -> Result<HTTPResponse, HTTPFailure> {
        HTTPConnection(settings: settings).send(method: method, url: url, body: body, headers: headers)
    }
}

/// One client kept across requests: a second request to the same server goes over the
/// connection (DNS, TCP and the TLS handshake) of the first while the server keeps it open,
/// and a new connection resumes the TLS session of the last one when the server gave a
/// ticket (`SessionCache`). Use it from one thread at a time, in a process that ignores
/// SIGPIPE (OpenSSL writes to the socket with plain write(2)). The TLS settings are read at
/// the first HTTPS request; later changes to `settings` move only its bounds.
public final class HTTPConnection {
    public var settings: HTTPSettings
    private var tls: TLSClientContext?
    private var stream: ClientStream?
    private let sessions: SessionCache

    public init(settings: HTTPSettings) {
        self.settings = settings
        sessions = SessionCache(settings: settings)
    }

    /// One request. A kept connection is used only while it is quiet (`ClientStream.isQuiet`:
    /// no goodbye from the server). A request on one that the server closed in the instant
    /// before the write (nothing of an answer came back) is sent once more on a new
    /// connection, as browsers and libcurl do; a request on a new connection is sent once.
    public func send(method: String, url: String, body: [UInt8]?, headers: [String] = []) -> Result<
        HTTPResponse, HTTPFailure
    > {
        let target: AuthenticatorURL
        switch AuthenticatorURL.parse(url) {
        case let .success(parsed): target = parsed
        case let .failure(error): return .failure(HTTPFailure(kind: .other, message: "bad URL: \(error.message)"))
        }
        guard target.isHTTPS || settings.allowHTTP else {
            return .failure(HTTPFailure(kind: .other, message: "protocol not allowed: http:// without allow_http"))
        }
        // A header with a line break would smuggle headers (or a request) of its own.
        guard !headers.contains(where: { $0.utf8.contains(13) || $0.utf8.contains(10) }) else {
            return .failure(HTTPFailure(kind: .other, message: "a request header holds a line break"))
        }
        let deadline = Deadline.now().adding(milliseconds: Int64(max(0, settings.totalTimeoutMilliseconds)))
        let request = HTTPWire.request(method: method, url: target, body: body, headers: headers)
        if let kept = stream, kept.url.sameServer(as: target), kept.isQuiet() {
            stream = nil
            switch exchange(kept, request: request, method: method, deadline: deadline) {
            case .closedBeforeAnswer: break // a new connection below
            case let .finished(result): return result
            }
        }
        stream = nil
        let opened: ClientStream
        switch open(target, deadline: deadline) {
        case let .failure(failure): return .failure(failure)
        case let .success(fresh): opened = fresh
        }
        switch exchange(opened, request: request, method: method, deadline: deadline) {
        case .closedBeforeAnswer:
            return .failure(
                HTTPFailure(
                    kind: .other,
                    message: "request to the authenticator failed: the server closed the connection without an answer"))
        case let .finished(result): return result
        }
    }

    private func open(_ target: AuthenticatorURL, deadline: Deadline) -> Result<ClientStream, HTTPFailure> {
        if target.isHTTPS && tls == nil {
            switch TLSClientContext.make(settings: settings) {
            case let .failure(failure): return .failure(failure)
            case let .success(context): tls = context
            }
        }
        let connectBy = Deadline.now().adding(milliseconds: Int64(max(0, settings.connectTimeoutMilliseconds)))
        let saved = target.isHTTPS ? sessions.load(for: target) : nil
        defer { if let saved { SSL_SESSION_free(saved) } }
        return ClientStream.open(target, tls: tls, session: saved, connectBy: connectBy, deadline: deadline)
    }

    private enum Exchange {
        case closedBeforeAnswer
        case finished(Result<HTTPResponse, HTTPFailure>)
    }

    private func exchange(_ stream: ClientStream, request: [UInt8], method: String, deadline: Deadline) -> Exchange {
        switch stream.write(request, until: deadline) {
        case .done: break
        case .closed: return .closedBeforeAnswer
        case .timedOut: return .finished(.failure(timedOut(received: 0)))
        case let .failed(why):
            return .finished(
                .failure(HTTPFailure(kind: .other, message: "request to the authenticator failed: \(why)")))
        }
        var received: [UInt8] = []
        var ended = false
        while true {
            switch HTTPWire.parse(received, ended: ended, method: method, limit: settings.maxResponseBytes) {
            case .incomplete:
                if ended {
                    return received.isEmpty
                        ? .closedBeforeAnswer
                        : .finished(
                            .failure(
                                HTTPFailure(
                                    kind: .other, message: "request to the authenticator failed: the answer was cut off"
                                )))
                }
            case let .invalid(why):
                return .finished(
                    .failure(HTTPFailure(kind: .other, message: "request to the authenticator failed: \(why)")))
            case .tooLarge:
                return .finished(
                    .failure(
                        HTTPFailure(kind: .tooLarge, message: "answer larger than \(settings.maxResponseBytes) bytes")))
            case let .complete(status, body, date, keepAlive):
                sessions.save(from: stream)
                if keepAlive && !ended { self.stream = stream }
                return .finished(.success(HTTPResponse(status: status, body: body, date: date)))
            }
            switch stream.read(into: &received, capacity: 16 * 1024, until: deadline) {
            case .done: continue
            case .closed: ended = true
            case .timedOut: return .finished(.failure(timedOut(received: received.count)))
            case let .failed(why):
                if received.isEmpty { return .closedBeforeAnswer }
                return .finished(
                    .failure(HTTPFailure(kind: .other, message: "request to the authenticator failed: \(why)")))
            }
        }
    }

    private func timedOut(received: Int) -> HTTPFailure {
        HTTPFailure(
            kind: .timeout,
            message:
                "authenticator timed out: Operation timed out after \(settings.totalTimeoutMilliseconds) milliseconds with \(received) bytes received"
        )
    }
}

extension AuthenticatorURL {
    /// Same scheme, host and port: a kept connection can carry the request.
    func sameServer(as other: AuthenticatorURL) -> Bool {
        isHTTPS == other.isHTTPS && host == other.host && effectivePort == other.effectivePort
    }
}

import CLibSSL
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// How to reach the authenticator: TLS settings and the bounds on every request.
package struct HTTPSettings: Sendable {
    package var allowHTTP = false
    package var caFile: String?
    package var pinnedPublicKey: String?
    package var connectTimeoutMilliseconds = 2000
    package var totalTimeoutMilliseconds = 5000
    package var maxResponseBytes = 16 * 1024
    /// A root-only directory where the TLS session of the last connection is kept for the
    /// next process (`SessionCache`); nil: kept in memory only.
    package var sessionDirectory: String?
    /// Asked at every slice of a wait (50 ms): true ends the request at once, as a timeout.
    /// A long poll nobody waits for any more (the module withdrew) need not run its course.
    package var abandon: (@Sendable () -> Bool)?

    package init() {}

    /// The settings the configuration gives (`cafile`, `pinned_pubkey`, `allow_http`).
    package init(options: Options) {
        allowHTTP = options.allowHTTP
        caFile = options.caFile
        pinnedPublicKey = options.pinnedPublicKey
    }
}

package struct HTTPResponse: Sendable {
    package var status: Int
    package var body: [UInt8]
    /// The `Date` header's value, when the server sent one (clock-skew checks).
    package var date: String?
}

/// One HTTP request, hardened for use by the helper and the command line: no redirects,
/// no proxy, nothing read from the environment, peer and host verified, bounded time and
/// size.
package enum HTTPClient {
    package static func send(
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
package final class HTTPConnection {
    package var settings: HTTPSettings
    private var tls: TLSClientContext?
    private var stream: ClientStream?
    private let sessions: SessionCache

    package init(settings: HTTPSettings) {
        self.settings = settings
        sessions = SessionCache(settings: settings)
    }

    /// How long a kept connection may have been idle and still carry a request: well under
    /// fingerauthd's 10 s idle limit, so that no request goes into a connection the server
    /// is closing. A fresh connection resumes the TLS session: it costs a round trip.
    package static let maxKeptIdleMilliseconds: Int64 = 5000

    /// One request. A kept connection is used only while it is quiet (`ClientStream.isQuiet`:
    /// no goodbye from the server) and was idle for at most `maxKeptIdleMilliseconds`. A
    /// request on one that the server closed in the instant before the write (nothing of an
    /// answer came back) is sent once more on a new connection, as browsers and libcurl do —
    /// but a POST only when not one byte of it was written: a POST that went out may have
    /// been acted on (a login token spent), and is never sent twice. A request on a new
    /// connection is sent once.
    package func send(method: String, url: String, body: [UInt8]?, headers: [String] = []) -> Result<
        HTTPResponse, HTTPFailure
    > {
        let watch = ProgressWatch()
        watch.abandon = settings.abandon
        let result = attempt(method: method, url: url, body: body, headers: headers, watch: watch)
        // A timeout the process slept through (frozen, stopped, starved) is no evidence of silence.
        if case let .failure(failure) = result, failure.kind == .timeout,
            !watch.ranThrough(bound: settings.totalTimeoutMilliseconds)
        {
            return .failure(.stalled(failure, stalledMilliseconds: watch.stalledMilliseconds))
        }
        return result
    }

    private func attempt(method: String, url: String, body: [UInt8]?, headers: [String], watch: ProgressWatch)
        -> Result<HTTPResponse, HTTPFailure>
    {
        let target: AuthenticatorURL
        switch AuthenticatorURL.parse(url) {
        case let .success(parsed): target = parsed
        case let .failure(error): return .failure(.badURL(error.message))
        }
        guard target.isHTTPS || settings.allowHTTP else { return .failure(.plainHTTP) }
        // A header with a line break would smuggle headers (or a request) of its own.
        guard !headers.contains(where: { $0.utf8.contains(13) || $0.utf8.contains(10) }) else {
            return .failure(.badHeader)
        }
        let deadline = Deadline.now().adding(milliseconds: Int64(max(0, settings.totalTimeoutMilliseconds)))
        let request = HTTPWire.request(method: method, url: target, body: body, headers: headers)
        let idempotent = method == "GET" || method == "HEAD"
        if let kept = stream, kept.url.sameServer(as: target),
            MonotonicInstant.now().milliseconds &- kept.lastUsed.milliseconds <= HTTPConnection.maxKeptIdleMilliseconds,
            kept.isQuiet()
        {
            stream = nil
            kept.watch = watch
            switch exchange(kept, request: request, method: method, deadline: deadline) {
            case let .closedBeforeAnswer(written) where idempotent || written == 0:
                break // a new connection below
            case .closedBeforeAnswer:
                return .failure(
                    .badAnswer("the kept connection closed after the request went out (not sent again)"))
            case let .finished(result): return result
            }
        }
        stream = nil
        let opened: ClientStream
        switch open(target, deadline: deadline, watch: watch) {
        case let .failure(failure): return .failure(failure)
        case let .success(fresh): opened = fresh
        }
        switch exchange(opened, request: request, method: method, deadline: deadline) {
        case .closedBeforeAnswer:
            return .failure(.badAnswer("the server closed the connection without an answer"))
        case let .finished(result): return result
        }
    }

    private func open(_ target: AuthenticatorURL, deadline: Deadline, watch: ProgressWatch) -> Result<
        ClientStream, HTTPFailure
    > {
        if target.isHTTPS && tls == nil {
            switch TLSClientContext.make(settings: settings) {
            case let .failure(failure): return .failure(failure)
            case let .success(context): tls = context
            }
        }
        let connectBy = Deadline.now().adding(milliseconds: Int64(max(0, settings.connectTimeoutMilliseconds)))
        let saved = target.isHTTPS ? sessions.load(for: target) : nil
        defer { if let saved { SSL_SESSION_free(saved) } }
        return ClientStream.open(
            target, tls: tls, session: saved, connectBy: connectBy, deadline: deadline, watch: watch)
    }

    private enum Exchange {
        /// Nothing of an answer came back; `written`: bytes of the request written before.
        case closedBeforeAnswer(written: Int)
        case finished(Result<HTTPResponse, HTTPFailure>)
    }

    private func exchange(_ stream: ClientStream, request: [UInt8], method: String, deadline: Deadline) -> Exchange {
        func failed(_ why: String) -> Exchange { .finished(.failure(.badAnswer(why))) }
        switch stream.write(request, until: deadline) {
        case .done: break
        case .closed: return .closedBeforeAnswer(written: stream.lastWritten)
        case .timedOut: return .finished(.failure(timedOut(received: 0)))
        case let .failed(why): return failed(why)
        }
        var reader = HTTPAnswerReader(method: method, limit: settings.maxResponseBytes)
        var ended = false
        var chunk: [UInt8] = []
        while true {
            switch reader.result(ended: ended) {
            case .incomplete:
                if ended {
                    return reader.received == 0
                        ? .closedBeforeAnswer(written: request.count) : failed("the answer was cut off")
                }
            case let .invalid(why): return failed(why)
            case .tooLarge:
                return .finished(.failure(.tooLarge(limit: settings.maxResponseBytes)))
            case let .framingTooLarge(what): return failed("answer too large: \(what)")
            case let .complete(status, body, date, keepAlive):
                sessions.save(from: stream)
                if keepAlive && !ended {
                    stream.lastUsed = MonotonicInstant.now()
                    self.stream = stream
                }
                return .finished(.success(HTTPResponse(status: status, body: body, date: date)))
            }
            chunk.removeAll(keepingCapacity: true)
            switch stream.read(into: &chunk, capacity: 16 * 1024, until: deadline) {
            case .done: reader.append(chunk)
            case .closed: ended = true
            case .timedOut: return .finished(.failure(timedOut(received: reader.received)))
            case let .failed(why):
                if reader.received == 0 { return .closedBeforeAnswer(written: request.count) }
                return failed(why)
            }
        }
    }
    private func timedOut(received: Int) -> HTTPFailure {
        .answerTimedOut(milliseconds: settings.totalTimeoutMilliseconds, received: received)
    }
}

extension AuthenticatorURL {
    /// Same scheme, host and port: a kept connection can carry the request.
    func sameServer(as other: AuthenticatorURL) -> Bool {
        isHTTPS == other.isHTTPS && host == other.host && effectivePort == other.effectivePort
    }
}

/// The login helper's channel to the authenticator: the warm-up under its own bound, then
/// the token's POST over the same connection.
extension HTTPConnection: AuthenticatorChannel {
    package func warmUp(url: String, body: [UInt8]?, boundMilliseconds: Int) -> Result<
        AuthenticatorAnswer, AuthenticatorFailure
    > {
        let bound = settings.totalTimeoutMilliseconds
        settings.totalTimeoutMilliseconds = boundMilliseconds
        defer { settings.totalTimeoutMilliseconds = bound }
        return send(method: body == nil ? "GET" : "POST", url: url, body: body).map {
            AuthenticatorAnswer(status: $0.status, body: $0.body)
        }
    }

    package func postToken(url: String, body: [UInt8]) -> Result<AuthenticatorAnswer, AuthenticatorFailure> {
        send(method: "POST", url: url, body: body).map { AuthenticatorAnswer(status: $0.status, body: $0.body) }
    }
}

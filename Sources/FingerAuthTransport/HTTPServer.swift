import CGnuTLS
import CMicroHTTPD
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads
import FingerAuthWeb
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why the HTTP daemon could not start.
package struct ServerError: Error, CustomStringConvertible, Sendable {
    package let message: String
    package var description: String { message }
}

/// How much the HTTP daemon lets clients use.
package struct ServerLimits: Sendable {
    /// Seconds a connection may stay idle (MHD_OPTION_CONNECTION_TIMEOUT): a client that
    /// stops sending headers or body is disconnected after it.
    package var connectionTimeout: UInt32 = 10
    /// Seconds for a whole request head, counted from the accept (TLS handshake included)
    /// or from the end of the previous answer on a keep-alive connection (`ConnectionWatch`).
    package var headTimeout: Double = 10
    /// Seconds from the end of the headers to the end of the body: a client trickling its
    /// body just under the idle timeout is cut off here.
    package var requestTimeout: Double = 30
    /// Simultaneous connections, all clients / one address. The default leaves room for
    /// four addresses at their cap and more.
    package var maxConnections: UInt32 = 1024
    /// Per address as the other limits count it (IPv6 by /64; `ConnectionCap`); 0: no cap.
    package var maxConnectionsPerAddress: UInt32 = 64
    /// New connections a second per address and how many at once, checked at the accept
    /// before any TLS (`ConnectionRateLimit`); a rate of 0 turns it off.
    package var connectionRate = ConnectionRateLimit.Limit(rate: 20, burst: 128)
    /// Worker threads (MHD_OPTION_THREAD_POOL_SIZE).
    package var threads: UInt32 = 4
    /// Who the client is behind a load balancer (`trusted-proxies`): the address every
    /// limit, audit row and log line counts (`HTTPRequest.peer`).
    package var clientAddress = ClientAddress()
    /// Bytes of memory per connection, which also caps the request line and headers
    /// (MHD answers 431 past it).
    package var connectionMemory: Int = 32 * 1024
    /// Seconds a TLS 1.3 session ticket may resume a session (`SessionTickets`); 0: no
    /// tickets, every connection a full handshake.
    package var sessionTicketLifetime: Int32 = 3600

    package init() {}
}

/// The libmicrohttpd daemon (MHD_start_daemon … MHD_stop_daemon), owned by this object:
/// an internal poll(2) thread pool, idle, head and request timeouts, connection and memory
/// limits, TLS (`TLSPolicy`) with a certificate that `replaceCertificate(with:)` swaps
/// without dropping a connection. Requests go to `AuthenticatorService`; this type only
/// moves bytes. `stop(grace:)` stops accepting, lets requests in flight finish, then closes.
package final class HTTPServer {
    /// Bodies between the service's cap and this size are read and dropped so that the
    /// client gets a clean 413; larger ones are cut off (413, then the connection closes).
    package static let drainLimit = 4 * 1024 * 1024

    private var daemon: OpaquePointer?
    private let dispatcher: RequestDispatcher
    /// Connections, their head deadline and the certificates they hold; alive until
    /// MHD_stop_daemon has returned (its callbacks reach it).
    private let watch: ConnectionWatch
    /// Connections per address, at once and new ones a second (MHD's accept policy), alive
    /// while the daemon runs.
    private let admission: Admission
    /// MHD_OPTION_SOCK_ADDR, kept alive while the daemon runs.
    private let address: UnsafeMutableRawPointer

    /// The port actually bound (differs from the requested one when that was 0).
    package let port: UInt16
    /// `https` with TLS material, else `http`.
    package let scheme: String

    /// Binds `listen` and starts serving `surface` of `service` on `threads` worker threads,
    /// over TLS with `tls` when given; each request's line goes to `log`.
    package init(
        service: AuthenticatorService, log: any RequestLines, listen: ListenAddress, tls: TLSCredentials?,
        limits: ServerLimits = ServerLimits(), surface: ListenerSurface = .login
    ) throws(ServerError) {
        dispatcher = RequestDispatcher(
            api: LoginAPI(service: service, log: log), requestTimeout: limits.requestTimeout,
            clientAddress: limits.clientAddress, surface: surface)
        let proxies = limits.clientAddress.trustedProxies
        let cap = ConnectionCap(
            limit: Int(limits.maxConnectionsPerAddress), exempt: proxies, metrics: service.metrics,
            log: { [log = service.log] in log.message($0) })
        var tickets: SessionTickets?
        if tls != nil && limits.sessionTicketLifetime > 0 {
            tickets = SessionTickets(lifetimeSeconds: limits.sessionTicketLifetime)
            if tickets == nil { throw ServerError(message: "cannot make a TLS session ticket key (GnuTLS)") }
        }
        watch = ConnectionWatch(
            headTimeout: limits.headTimeout, certificates: tls.map { CertificateSlot($0) },
            cap: cap, tickets: tickets, metrics: service.metrics, log: service.log)
        admission = Admission(
            cap: cap,
            rate: ConnectionRateLimit(
                limits.connectionRate, exempt: proxies, metrics: service.metrics,
                log: { [log = service.log] in log.message($0) }))
        let storage = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<sockaddr_storage>.size,
            alignment: MemoryLayout<sockaddr_storage>.alignment)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<sockaddr_storage>.size)
        address = storage
        let copied: Void? = listen.withSocketAddress { pointer, length in
            storage.copyMemory(from: UnsafeRawPointer(pointer), byteCount: Int(length))
        }
        scheme = tls == nil ? "http" : "https"
        // poll(2), not epoll: libmicrohttpd 0.9.75's epoll loop spins on a TLS connection
        // whose handshake has read part of its input and waits for the rest — one client
        // that stops mid-handshake kept a core at 100% until the head timeout
        // (test_authenticator_http.py, stalled handshakes). Its poll loop does not.
        // TURBO: reads and writes tried before poll says a socket is ready, no TLS
        // close_notify on close — measured: 10-20% more logins per second under load.
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue | MHD_USE_ERROR_LOG.rawValue
            | MHD_USE_ITC.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_TURBO.rawValue
        if listen.family == .ipv6 { flags |= MHD_USE_IPv6.rawValue }
        if tls != nil { flags |= MHD_USE_TLS.rawValue }
        guard copied != nil else {
            port = 0
            throw ServerError(message: "\(listen.host): not a numeric address")
        }
        // Said here, with who holds the address, before libmicrohttpd would say only
        // "Failed to bind to port 0: Address already in use".
        if let conflict = ListenConflict.probe(listen) {
            port = 0
            throw ServerError(message: conflict)
        }
        var config = fa_mhd_config()
        config.flags = UInt32(flags)
        config.address = UnsafePointer(address.assumingMemoryBound(to: sockaddr.self))
        config.handler = accessHandler
        config.handler_cls = Unmanaged.passUnretained(dispatcher).toOpaque()
        config.completed = requestCompleted
        config.completed_cls = Unmanaged.passUnretained(dispatcher).toOpaque()
        config.accept_policy = acceptPolicy
        config.accept_policy_cls = Unmanaged.passUnretained(admission).toOpaque()
        config.notify_connection = connectionNotified
        config.notify_connection_cls = Unmanaged.passUnretained(watch).toOpaque()
        config.thread_pool_size = limits.threads
        config.connection_timeout = limits.connectionTimeout
        config.connection_limit = limits.maxConnections
        // MHD's own per-IP limit compares whole addresses; `ConnectionCap` counts IPv6 by /64.
        config.per_ip_connection_limit = 0
        config.connection_memory_limit = limits.connectionMemory
        if tls != nil { config.https_cert_callback = fa_gnutls_retrieve_function_pointer(retrieveCertificate) }
        let started: OpaquePointer? = TLSPolicy.priorities.withCString { priorities in
            config.https_priorities = priorities
            return fa_mhd_start_daemon(&config)
        }
        guard let started else {
            port = 0
            throw ServerError(
                message: "cannot listen on \(listen.urlHost):\(listen.port) (see the libmicrohttpd message above)")
        }
        daemon = started
        port = fa_mhd_bound_port(started)
        watch.start()
    }

    /// New handshakes get `credentials` from now on; connections made and handshakes begun
    /// before keep what they were given. False on a plain-HTTP server.
    @discardableResult
    package func replaceCertificate(with credentials: TLSCredentials) -> Bool {
        guard let slot = watch.certificates else { return false }
        _ = slot.replace(with: credentials)
        return true
    }

    /// Stops accepting (MHD_quiesce_daemon, listening socket closed), waits up to `grace`
    /// seconds for the requests in flight to be answered (answers say `Connection: close`
    /// meanwhile), then closes every connection and joins the workers (MHD_stop_daemon).
    /// Returns how many requests were still unfinished when it closed them.
    @discardableResult
    package func stop(grace: Double = 0) -> Int {
        guard let daemon else { return 0 }
        var left = 0
        if grace > 0 {
            dispatcher.startDraining()
            let listener = MHD_quiesce_daemon(daemon)
            if listener >= 0 { close(listener) }
            // Long polls answer now, with what they have: they would only wait out the grace.
            dispatcher.service.waits.closeAll()
            let deadline = monotonicSeconds() + grace
            while true {
                left = dispatcher.inFlight
                if left == 0 || monotonicSeconds() >= deadline { break }
                usleep(20_000)
            }
        }
        // MHD aborts the process when stopped with a connection still parked: release the
        // held-back answers, and wait for the writes the others wait on (the store's own
        // timeouts bound them), however long the grace.
        dispatcher.service.waits.closeAll()
        dispatcher.timers.stop()
        guard dispatcher.waitForParked(seconds: 60) else {
            dispatcher.service.log.message(
                "requests still waiting for their commit after 60 s: the HTTP daemon is left running")
            return left
        }
        MHD_stop_daemon(daemon)
        self.daemon = nil
        watch.stop()
        return left
    }

    deinit {
        stop()
        address.deallocate()
    }
}

/// The per-request body being received, owned by MHD through `con_cls`
/// (Unmanaged.passRetained) and released in `requestCompleted`; and, while the request is
/// parked for a write, what comes next and the write's outcome.
///
/// `@unchecked Sendable`: libmicrohttpd calls for one request on one thread at a time; the
/// only field another thread writes is `outcome`, on the writer's thread, under the
/// dispatcher's lock, read after the connection was resumed under the same lock.
final class RequestState: @unchecked Sendable {
    var body: [UInt8] = []
    var received = 0
    var tooLarge = false
    /// When the headers were complete (CLOCK_MONOTONIC seconds).
    let started = monotonicSeconds()
    /// The request's line, once it began.
    var line: RequestLine?
    /// The operation it asks for, and the service's side of it, once it began.
    var operation: ServiceOperation?
    var exchange: Exchange?
    /// The step to take with the outcome of the write the request is parked for.
    var next: ((Result<[WriteOutcome], StoreError>) -> Step)?
    /// That outcome, set on the writer's thread (under the dispatcher's lock).
    var outcome: Result<[WriteOutcome], StoreError>?
}

/// What the C callbacks reach through their closure pointer; the server keeps it alive
/// until MHD_stop_daemon has returned.
///
/// `@unchecked Sendable`: libmicrohttpd's threads and the writer's call it. `active`,
/// `draining` and `parked` change only under `lock`; the rest is set in `init` and Sendable.
final class RequestDispatcher: @unchecked Sendable {
    /// A long poll's deadline comes at the next half second (`WaitTimers.after(_:roundedUpTo:_:)`).
    static let awaitTick = 0.5
    let api: LoginAPI
    var service: AuthenticatorService { api.service }
    let requestTimeout: Double
    /// When parked connections go on: the answers held back (`Step.outcomeAfterPause`,
    /// `AuthenticatorService.tarpit` later) and the deadlines of long polls (`Step.await`).
    let timers = WaitTimers()
    private let lock = Lock()
    private var active = 0
    private var draining = false

    /// Which endpoints this listener answers: the login API or the admin console, never both.
    let surface: ListenerSurface
    /// Who the client is: the TCP peer, or behind a trusted proxy the client it names.
    let clientAddress: ClientAddress
    /// The query parameters the console reads (none for the login API).
    let queryNames: [String]

    init(api: LoginAPI, requestTimeout: Double, clientAddress: ClientAddress, surface: ListenerSurface) {
        self.api = api
        self.requestTimeout = requestTimeout
        self.clientAddress = clientAddress
        self.surface = surface
        if case let .console(console) = surface {
            queryNames = console.queryNames
        } else {
            queryNames = LoginAPI.queryNames
        }
        timers.start()
    }

    /// Requests begun (headers read) and not yet completed.
    var inFlight: Int { lock.withLock { active } }
    /// Connections suspended while their request's write commits.
    private var parked = 0
    /// Of the requests in flight, the long polls parked until what they wait for changes:
    /// they do not keep a lone request from committing on its worker.
    private var awaiting = 0

    /// Waits until no connection is parked, at most `seconds`; false when some still are.
    func waitForParked(seconds: Double) -> Bool {
        let deadline = monotonicSeconds() + seconds
        while lock.withLock({ parked }) > 0 {
            if monotonicSeconds() >= deadline { return false }
            usleep(5_000)
        }
        return true
    }

    /// The final call of a request: starts it in the service and takes its steps. A step
    /// that writes parks the connection (MHD_suspend_connection) and hands the items to the
    /// group commit; the writer's completion stores the outcome and resumes the connection,
    /// and MHD calls the access handler again, which goes on from there (`resume`). The
    /// worker thread meanwhile serves its other connections. Only a request alone in flight,
    /// with the writer idle, has its items committed by the worker itself, and goes on at once.
    func begin(_ connection: OpaquePointer, method: String, url: String, state: RequestState) -> MHD_Result {
        let request = makeRequest(connection, method: method, url: url, state: state)
        let line = RequestLine(request)
        guard case .login = surface, case let .operation(operation) = LoginAPI.route(method: method, path: url) else {
            return queue(answerAtOnce(request), connection)
        }
        let (exchange, step) = service.start(operation, LoginAPI.serviceRequest(request), route: line.label)
        state.line = line
        state.operation = operation
        state.exchange = exchange
        return take(step, connection, state)
    }

    /// The access handler called again for a resumed connection: the next step, with the
    /// write's outcome.
    func resume(_ connection: OpaquePointer, state: RequestState) -> MHD_Result {
        let outcome: Result<[WriteOutcome], StoreError>? = lock.withLock {
            let value = state.outcome
            state.outcome = nil
            return value
        }
        guard let outcome, let next = state.next else { return .YES }
        state.next = nil
        return take(next(outcome), connection, state)
    }

    private func take(_ step: Step, _ connection: OpaquePointer, _ state: RequestState) -> MHD_Result {
        switch step {
        case let .outcome(outcome):
            guard let operation = state.operation, let line = state.line, let exchange = state.exchange else {
                return .NO
            }
            let response = AnswerMapping.answer(outcome, of: operation)
            api.complete(line, exchange.facts, response)
            return queue(response, connection)
        case let .outcomeAfterPause(outcome):
            return park(connection, state, then: { _ in .outcome(outcome) }) { [self] resume in
                timers.after(AuthenticatorService.tarpit) { resume(.success([])) }
            }
        case let .await(key, version, seconds, then):
            return park(connection, state, then: { _ in then() }) { [self] resume in
                lock.withLock { awaiting += 1 }
                let once = ResumeOnce { [self] outcome in
                    lock.withLock { awaiting -= 1 }
                    resume(outcome)
                }
                let room = service.waits
                let ticket = room.enter(key, after: version) { once.fire() }
                guard let ticket else { return }
                timers.after(seconds, roundedUpTo: Self.awaitTick) {
                    room.leave(key, ticket: ticket)
                    once.fire()
                }
            }
        case let .write(items, next):
            // The only request in flight and the writer idle: commit here and go on, no
            // parking and no hand-over. With others in flight the worker stays free for them
            // and their writes share the writer's next commit.
            if inFlight - awaiting <= 1, let outcome = service.commitAlone(items) {
                return take(next(outcome), connection, state)
            }
            return park(connection, state, then: next) { [self] resume in
                service.submit(items, completion: resume)
            }
        }
    }

    /// Parks the connection (MHD_suspend_connection) and hands `wait` the function that,
    /// called from any thread with an outcome, stores it and resumes the connection; the
    /// access handler, called again, goes on with `then`.
    private func park(
        _ connection: OpaquePointer, _ state: RequestState,
        then: @escaping (Result<[WriteOutcome], StoreError>) -> Step,
        wait: (@escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void) -> Void
    ) -> MHD_Result {
        state.next = then
        lock.withLock { parked += 1 }
        MHD_suspend_connection(connection)
        let handle = ParkedConnection(connection)
        wait { [self] outcome in
            lock.withLock {
                state.outcome = outcome
                MHD_resume_connection(handle.connection)
                parked -= 1
            }
        }
        return .YES
    }

    private func makeRequest(_ connection: OpaquePointer, method: String, url: String, state: RequestState)
        -> HTTPRequest
    {
        var peer = [CChar](repeating: 0, count: 64)
        let peerText = fa_mhd_peer_address(connection, &peer, peer.count) == 0 ? String(cString: peer) : "-"
        let client = clientAddress.resolve(
            peer: peerText,
            forwardedFor: trustsProxies ? headerList(connection, "X-Forwarded-For") : nil)
        var request = HTTPRequest(
            method: method, path: url,
            authorization: header(connection, "Authorization"),
            contentType: header(connection, "Content-Type"),
            body: state.body, bodyTooLarge: state.tooLarge, peer: client)
        if case .console = surface {
            request.cookie = header(connection, "Cookie")
            request.origin = header(connection, "Origin")
        }
        for name in queryNames {
            if let value = MHD_lookup_connection_value(connection, .GET_ARGUMENT_KIND, name) {
                request.query[name] = String(cString: value)
            }
        }
        state.body = []
        return request
    }

    func begin() { lock.withLock { active += 1 } }
    func end() { lock.withLock { active -= 1 } }
    func startDraining() { lock.withLock { draining = true } }
    var isDraining: Bool { lock.withLock { draining } }

    /// Builds the request, asks the service and waits for its writes on this thread, queues
    /// the answer (MHD_queue_response). Only for the rare answer given before the body.
    func respond(_ connection: OpaquePointer, method: String, url: String, state: RequestState) -> MHD_Result {
        queue(answerAtOnce(makeRequest(connection, method: method, url: url, state: state)), connection)
    }

    /// The answer to `request` on this listener's surface, its writes committed on this
    /// thread, its line written.
    private func answerAtOnce(_ request: HTTPRequest) -> HTTPResponse {
        switch surface {
        case .login:
            return api.handle(request)
        case let .console(console):
            let response = console.answer(request, address: request.peer)
            api.complete(RequestLine(request), RequestFacts(), response)
            return response
        }
    }

    /// Queues `answer` on `connection` (MHD_queue_response).
    private func queue(_ answer: HTTPResponse, _ connection: OpaquePointer) -> MHD_Result {
        let created = answer.body.withUnsafeBytes { fa_mhd_response_copy($0.baseAddress, $0.count) }
        guard let response = created else { return .NO }
        defer { MHD_destroy_response(response) }
        if !answer.body.isEmpty { MHD_add_response_header(response, "Content-Type", answer.contentType) }
        MHD_add_response_header(response, "Cache-Control", "no-store")
        if isDraining { MHD_add_response_header(response, "Connection", "close") }
        for (name, value) in answer.headers { MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(clamping: answer.status), response)
    }

    /// Lets the service audit and log a body cut off mid-upload; its answer is not sent.
    func refuseOversized(_ connection: OpaquePointer, method: String, url: String) {
        var peer = [CChar](repeating: 0, count: 64)
        let peerText = fa_mhd_peer_address(connection, &peer, peer.count) == 0 ? String(cString: peer) : "-"
        let client = clientAddress.resolve(peer: peerText, forwardedFor: nil)
        _ = answerAtOnce(HTTPRequest(method: method, path: url, bodyTooLarge: true, peer: client))
    }

    func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }

    /// Whether any `X-Forwarded-For` is believed: only then is it read.
    private var trustsProxies: Bool { !clientAddress.trustedProxies.isEmpty }

    /// Every line of header `name`, in the order received, joined with ", " (RFC 9110
    /// §5.3: one list); nil when there is none. MHD_lookup_connection_value returns only
    /// the first line, and a proxy that appends a line of its own after the client's
    /// (HAProxy's `option forwardfor`) would then leave the client's word to count.
    func headerList(_ connection: OpaquePointer, _ name: String) -> String? {
        let lines = HeaderLines(name: name)
        _ = withExtendedLifetime(lines) {
            MHD_get_connection_values(
                connection, .HEADER_KIND,
                { cls, _, key, value in
                    guard let cls, let key, let value else { return .YES }
                    let lines = Unmanaged<HeaderLines>.fromOpaque(cls).takeUnretainedValue()
                    if strcasecmp(key, lines.name) == 0 { lines.values.append(String(cString: value)) }
                    return .YES
                }, Unmanaged.passUnretained(lines).toOpaque())
        }
        return lines.values.isEmpty ? nil : lines.values.joined(separator: ", ")
    }
}

/// The lines of one header, gathered by MHD_get_connection_values' iterator.
private final class HeaderLines {
    let name: String
    var values: [String] = []
    init(name: String) { self.name = name }
}

/// MHD_AccessHandlerCallback: called once after the headers, once per body chunk, and
/// once more when the request is complete. Bodies past the service's cap are counted but
/// not kept.
private func accessHandler(
    cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
    url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
    version: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?,
    uploadDataSize: UnsafeMutablePointer<Int>?,
    conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let url, let method, let uploadDataSize, let conCls else { return .NO }
    let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
    let methodText = String(cString: method)
    let urlText = String(cString: url)
    guard let raw = conCls.pointee else {
        ConnectionWatch.headArrived(connection)
        let state = RequestState()
        conCls.pointee = Unmanaged.passRetained(state).toOpaque()
        dispatcher.begin()
        // A body announced beyond what we are willing to drain: answer now; MHD discards
        // the rest and closes the connection after the answer.
        if let length = dispatcher.header(connection, "Content-Length").flatMap({ Int($0) }),
            length > HTTPServer.drainLimit
        {
            state.tooLarge = true
            return dispatcher.respond(connection, method: methodText, url: urlText, state: state)
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
    let size = uploadDataSize.pointee
    if monotonicSeconds() - state.started > dispatcher.requestTimeout {
        // A body trickled in just under the idle timeout: drop the connection.
        dispatcher.service.log.message(
            "\(methodText) from a slow client: body not complete after \(dispatcher.requestTimeout) s; connection closed"
        )
        return .NO
    }
    if size > 0 {
        state.received += size
        if state.received > AuthenticatorService.maxBodyBytes {
            state.tooLarge = true
            state.body = []
            // Past the drain limit (chunked uploads): no answer can be queued while data
            // is arriving, so record the refusal (audit row, log line) and drop the connection.
            if state.received > HTTPServer.drainLimit {
                dispatcher.refuseOversized(connection, method: methodText, url: urlText)
                return .NO
            }
        } else if let uploadData {
            uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
            }
        }
        uploadDataSize.pointee = 0
        return .YES
    }
    if state.exchange != nil { return dispatcher.resume(connection, state: state) }
    return dispatcher.begin(connection, method: methodText, url: urlText, state: state)
}

/// A parked connection's handle, handed to the writer's thread to resume it. MHD keeps a
/// suspended connection alive until it is resumed (and the server's stop waits for that).
///
/// `@unchecked Sendable`: an MHD_Connection pointer, handed to the writer's thread to call
/// MHD_resume_connection, which libmicrohttpd allows from any thread.
struct ParkedConnection: @unchecked Sendable {
    let connection: OpaquePointer

    init(_ connection: OpaquePointer) { self.connection = connection }
}

/// MHD_RequestCompletedCallback: starts the connection's next head phase, releases the
/// request's `RequestState` and counts the request finished.
private func requestCompleted(
    cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
    conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    toe: MHD_RequestTerminationCode
) {
    if let connection { ConnectionWatch.requestFinished(connection) }
    guard let conCls, let raw = conCls.pointee else { return }
    Unmanaged<RequestState>.fromOpaque(raw).release()
    conCls.pointee = nil
    if let cls { Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue().end() }
}

/// MHD_NotifyConnectionCallback: tells the watch of each connection's start and close.
private func connectionNotified(
    cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
    socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection, let socketContext else { return }
    let watch = Unmanaged<ConnectionWatch>.fromOpaque(cls).takeUnretainedValue()
    switch code {
    case .CONNECTION_NOTIFY_STARTED: watch.started(connection, context: socketContext)
    case .CONNECTION_NOTIFY_CLOSED: watch.closed(context: socketContext)
    }
}

/// CLOCK_MONOTONIC in seconds: the transport's deadlines and timeouts.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A parked long poll's resumption, run once whichever comes first: what it waits for
/// changed (`WaitRoom`), or its deadline (`WaitTimers`).
private final class ResumeOnce: Sendable {
    private let resume: @Sendable (Result<[WriteOutcome], StoreError>) -> Void
    private let fired = Mutex(false)

    init(_ resume: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void) {
        self.resume = resume
    }

    func fire() {
        let first = fired.withLock { fired -> Bool in
            defer { fired = true }
            return !fired
        }
        if first { resume(.success([])) }
    }
}

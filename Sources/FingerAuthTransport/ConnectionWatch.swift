import CGnuTLS
import CMicroHTTPD
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

#if canImport(Glibc)
import Glibc
#endif

/// One connection as the watch sees it: its socket, its peer, and the fields below, which
/// only change under the watch's lock.
final class ConnectionRecord {
    /// Outlives every record: records go in `closed`, which libmicrohttpd calls for every
    /// connection before MHD_stop_daemon returns.
    unowned let watch: ConnectionWatch
    let fd: Int32
    let peer: String
    /// What the per-address cap counts this connection under (nil: not counted).
    var capKey: [UInt8]?
    /// When the current head phase began (CLOCK_MONOTONIC seconds): the accept for the
    /// first request, the end of the previous answer on a keep-alive connection; nil while
    /// a request is being read or answered.
    var headSince: Double?
    /// A request was answered on this connection (it is a keep-alive connection now).
    var answered = false
    /// Shut down by the watchdog (once is enough).
    var cut = false
    /// Its TLS handshake was counted (full or resumed), at its first request.
    var handshakeCounted = false
    /// Every certificate set a handshake on this connection was given: each stays alive
    /// until the connection closes, after its TLS session was freed.
    var credentials: [TLSCredentials] = []

    init(watch: ConnectionWatch, fd: Int32, peer: String, since: Double) {
        self.watch = watch
        self.fd = fd
        self.peer = peer
        headSince = since
    }
}

/// The request-head deadline that libmicrohttpd 0.9.75 lacks: its connection timeout is
/// reset by every byte, so a client dripping one header byte every few seconds holds a
/// connection forever. The watch learns each connection from MHD_OPTION_NOTIFY_CONNECTION
/// (socket and peer, at accept), ends the head phase on the access handler's first call
/// for a request (`headArrived`), starts the next one when the request completes
/// (`requestFinished`), and a thread of its own shuts down (shutdown(2), SHUT_RDWR) every
/// connection whose head phase is older than `headTimeout`; libmicrohttpd then reads end
/// of file and closes the connection as it would for a client that went away.
///
/// The deadline counts from the accept for the first request, so a slow TLS handshake is
/// cut too, and from the end of the previous answer on a keep-alive connection: never
/// looser than "from the first byte of the request". An idle keep-alive connection is
/// therefore closed `headTimeout` after its last answer, quietly; a connection that was
/// sending a head is logged (`SlowClientReport`).
///
/// The socket is never reused under the watchdog: libmicrohttpd closes it only after the
/// NOTIFY_CLOSED callback returned (daemon.c: MHD_cleanup_connections, and the failure
/// path of new_connection_process_), and that callback takes the lock the watchdog holds
/// while it calls shutdown. libmicrohttpd wakes its own connections the same way when it
/// stops (daemon.c, close_all_connections: shutdown(SHUT_RDWR) from another thread).
///
/// `@unchecked Sendable`: libmicrohttpd's threads, the watchdog and the daemon's thread all
/// call it. `records`, `report` and every record's fields change only under `lock`;
/// `stopping` and `thread` only under `sleeping`; the rest is set in `init`.
final class ConnectionWatch: @unchecked Sendable {
    /// How often the watchdog looks, seconds: the precision of the cut.
    static let tick = 0.1

    let headTimeout: Double
    /// Where TLS handshakes take their certificate from; nil for plain HTTP.
    let certificates: CertificateSlot?
    /// Simultaneous connections per address: told of each connection that starts and ends.
    let cap: ConnectionCap?
    /// Turns TLS session tickets on for each new connection; nil: none issued.
    let tickets: SessionTickets?
    /// Where handshakes are counted.
    let metrics: Metrics?
    private let log: any ServiceLog
    private let lock = Lock()
    private var records: [ObjectIdentifier: ConnectionRecord] = [:]
    private var report = SlowClientReport()

    private let sleeping = Lock()
    private let wake = Condition()
    private var stopping = false
    private var thread: WorkerThread?

    init(
        headTimeout: Double, certificates: CertificateSlot?, cap: ConnectionCap? = nil,
        tickets: SessionTickets? = nil, metrics: Metrics? = nil, log: any ServiceLog
    ) {
        self.metrics = metrics
        self.headTimeout = headTimeout
        self.certificates = certificates
        self.cap = cap
        self.tickets = tickets
        self.log = log
    }

    deinit { stop() }

    // MARK: events from libmicrohttpd's threads

    /// NOTIFY_CONNECTION STARTED: registers the connection; its socket context owns the
    /// record. A connection one past its address's cap is shut down at once (before TLS).
    func started(_ connection: OpaquePointer, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        tickets?.enable(on: connection)
        var peer = [CChar](repeating: 0, count: 64)
        let peerText = fa_mhd_peer_address(connection, &peer, peer.count) == 0 ? String(cString: peer) : "-"
        let now = monotonicSeconds()
        let record = ConnectionRecord(watch: self, fd: fa_mhd_connection_fd(connection), peer: peerText, since: now)
        var overCap = false
        if let cap, let address = fa_mhd_peer_sockaddr(connection),
            let bytes = socketAddressBytes(address, length: socklen_t(MemoryLayout<sockaddr_in6>.size)),
            let key = cap.key(bytes)
        {
            record.capKey = key
            overCap = !cap.open(key, now: now)
        }
        lock.withLock {
            records[ObjectIdentifier(record)] = record
            if overCap {
                shutdown(record.fd, Int32(SHUT_RDWR))
                record.cut = true
            }
        }
        context.pointee = Unmanaged.passRetained(record).toOpaque()
    }

    /// NOTIFY_CONNECTION CLOSED: forgets the connection before libmicrohttpd closes its socket.
    func closed(context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let raw = context.pointee else { return }
        context.pointee = nil
        let record = Unmanaged<ConnectionRecord>.fromOpaque(raw).takeRetainedValue()
        lock.withLock { records[ObjectIdentifier(record)] = nil }
        if let key = record.capKey { cap?.close(key) }
        // The record goes at the end of this scope, outside the lock, and with it the
        // connection's hold on credentials a reload replaced meanwhile: libmicrohttpd has
        // freed the connection's TLS session by now (MHD_cleanup_connections calls
        // gnutls_deinit before NOTIFY_CLOSED).
    }

    /// The access handler's first call for a request: its head is complete.
    /// The first request of a TLS connection counts its handshake, full or resumed.
    static func headArrived(_ connection: OpaquePointer) {
        let first = withRecord(connection) { _, record in
            record.headSince = nil
            defer { record.handshakeCounted = true }
            return record.handshakeCounted ? nil : record.watch
        }
        guard let watch = first ?? nil, let metrics = watch.metrics, let session = fa_mhd_tls_session(connection) else {
            return
        }
        metrics.tlsHandshake(resumed: gnutls_session_is_resumed(OpaquePointer(session)) != 0)
    }

    /// The request completed (answered or abandoned): the next head phase starts now.
    static func requestFinished(_ connection: OpaquePointer) {
        let now = monotonicSeconds()
        withRecord(connection) { _, record in
            record.headSince = now
            record.answered = true
        }
    }

    /// For the TLS certificate callback: the current certificate set, held by the
    /// connection until it closes. Nil without a slot or a record (the handshake fails).
    static func credentialsForHandshake(_ connection: OpaquePointer) -> TLSCredentials? {
        withRecord(connection) { watch, record -> TLSCredentials? in
            guard let current = watch.certificates?.current else { return nil }
            if record.credentials.last !== current { record.credentials.append(current) }
            return current
        } ?? nil
    }

    /// Runs `body` under the watch's lock with the connection's record, found through the
    /// socket context that `started` filled.
    private static func withRecord<T>(
        _ connection: OpaquePointer,
        _ body: (ConnectionWatch, ConnectionRecord) -> T
    ) -> T? {
        guard let raw = fa_mhd_socket_context(connection) else { return nil }
        let record = Unmanaged<ConnectionRecord>.fromOpaque(raw).takeUnretainedValue()
        let watch = record.watch
        return watch.lock.withLock { body(watch, record) }
    }

    // MARK: the watchdog

    /// Starts the watchdog thread; false (logged) when it could not be created.
    @discardableResult
    func start() -> Bool {
        switch WorkerThread.start({ [self] in loop() }) {
        case let .success(started):
            sleeping.withLock { thread = started }
            return true
        case let .failure(error):
            log.message("cannot start the request-head watchdog: \(error)")
            return false
        }
    }

    /// Wakes the watchdog and joins it (at most one tick).
    func stop() {
        let running = sleeping.withLock { () -> WorkerThread? in
            stopping = true
            wake.broadcast()
            defer { thread = nil }
            return thread
        }
        running?.join()
        flushReport(force: true)
    }

    private func loop() {
        while waitOneTick() {
            sweep(now: monotonicSeconds())
            flushReport(force: false)
        }
    }

    /// Sleeps one tick; false once `stop()` was called.
    private func waitOneTick() -> Bool {
        let deadline = Deadline.after(seconds: Self.tick)
        return sleeping.withLock { () -> Bool in
            while !stopping && !deadline.hasPassed { wake.wait(sleeping, until: deadline) }
            return !stopping
        }
    }

    /// Shuts down every connection whose head phase began `headTimeout` ago or earlier.
    private func sweep(now: Double) {
        var slow: [String] = []
        lock.withLock {
            for record in records.values where !record.cut {
                guard let since = record.headSince, now - since >= headTimeout else { continue }
                // Idle since its last answer (TCP saw no data since then): a keep-alive
                // connection left open, not a slow client; closed without a log line.
                let quiet = fa_tcp_ms_since_receive(record.fd)
                let idle = record.answered && quiet >= 0 && Double(quiet) / 1000 + 0.05 >= now - since
                shutdown(record.fd, Int32(SHUT_RDWR))
                record.cut = true
                if !idle { slow.append(record.peer) }
            }
        }
        if !slow.isEmpty { lock.withLock { report.add(slow) } }
    }

    private func flushReport(force: Bool) {
        let now = monotonicSeconds()
        let lines = lock.withLock { report.lines(now: now, force: force, timeout: Int(headTimeout)) }
        for line in lines { log.message(line) }
    }
}

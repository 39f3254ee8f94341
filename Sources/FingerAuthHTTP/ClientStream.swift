import CLibSSL
import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// One connection to the authenticator: a TCP socket, with TLS over it for `https`. Every
/// step waits at most until a deadline (poll(2) on a non-blocking socket); nothing here
/// reads the environment. Closed (TLS object freed, socket closed) when released.
final class ClientStream {
    private let fd: Int32
    private let ssl: OpaquePointer?
    /// Where it goes.
    let url: AuthenticatorURL
    /// When the connection last carried an answer (or was opened): a kept connection idle
    /// for long may be one the server is closing.
    var lastUsed = MonotonicInstant.now()
    /// The current request's watch on this process's own progress.
    var watch = ProgressWatch()

    private init(fd: Int32, ssl: OpaquePointer?, url: AuthenticatorURL, watch: ProgressWatch) {
        self.fd = fd
        self.ssl = ssl
        self.url = url
        self.watch = watch
    }

    deinit {
        if let ssl { SSL_free(ssl) }
        close(fd)
    }

    /// Resolves and connects to `url`'s host and port before `connectBy` (and `deadline`),
    /// then for `https` completes a TLS handshake with `tls`, offering `session` to resume.
    static func open(
        _ url: AuthenticatorURL, tls: TLSClientContext?, session: OpaquePointer?,
        connectBy: Deadline, deadline: Deadline, watch: ProgressWatch
    ) -> Result<ClientStream, HTTPFailure> {
        let until = min(connectBy, deadline)
        let fd: Int32
        switch connectSocket(host: url.host, port: url.effectivePort, until: until, watch: watch) {
        case let .failure(failure): return .failure(failure)
        case let .success(socket): fd = socket
        }
        guard url.isHTTPS else { return .success(ClientStream(fd: fd, ssl: nil, url: url, watch: watch)) }
        guard let tls else {
            close(fd)
            return .failure(.tls("no TLS context"))
        }
        switch tls.handshake(fd: fd, host: url.host, session: session, until: until, watch: watch) {
        case let .failure(failure):
            close(fd)
            return .failure(failure)
        case let .success(ssl):
            return .success(ClientStream(fd: fd, ssl: ssl, url: url, watch: watch))
        }
    }

    /// The session to resume a later connection with (a TLS 1.3 ticket the server sent),
    /// retained for the caller (SSL_SESSION_free); nil when there is none to resume.
    func resumableSession() -> OpaquePointer? {
        guard let ssl, let session = SSL_get1_session(ssl) else { return nil }
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return nil
        }
        return session
    }

    /// Whether a kept connection is still open and quiet: nothing waits to be read, neither
    /// the server's goodbye (close_notify, FIN) nor stray bytes. A connection that is not
    /// is never written to again, so that a request goes to a server that said goodbye only
    /// in the instant between this look and the write.
    func isQuiet() -> Bool {
        if let ssl, SSL_pending(ssl) > 0 { return false }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return Glibc.poll(&pfd, 1, 0) == 0
    }

    enum IOResult {
        case done(Int)
        case closed
        case timedOut
        case failed(String)
    }

    /// Bytes of the last `write` that went out (the kernel or TLS took them), also when it
    /// failed part way.
    private(set) var lastWritten = 0

    /// Writes all of `bytes` before `deadline`.
    func write(_ bytes: [UInt8], until deadline: Deadline) -> IOResult {
        var sent = 0
        lastWritten = 0
        defer { lastWritten = sent }
        while sent < bytes.count {
            let step = bytes.withUnsafeBytes { buffer -> (Int, Int32) in
                guard let base = buffer.baseAddress else { return (0, 0) }
                let start = base + sent
                let count = bytes.count - sent
                if let ssl {
                    var written = 0
                    let ok = SSL_write_ex(ssl, start, count, &written)
                    return ok == 1 ? (written, 0) : (-1, SSL_get_error(ssl, ok))
                }
                let n = send(fd, start, count, Int32(MSG_NOSIGNAL))
                return n >= 0 ? (n, 0) : (-1, errno)
            }
            if step.0 > 0 {
                sent += step.0
                continue
            }
            switch wait(after: step.1, writing: true, until: deadline) {
            case .ready: continue
            case let other: return other.result
            }
        }
        return .done(sent)
    }

    /// Reads what is there, up to `capacity` bytes, waiting for the first byte until
    /// `deadline`. `.closed` at the end of the stream.
    func read(into buffer: inout [UInt8], capacity: Int, until deadline: Deadline) -> IOResult {
        var chunk = [UInt8](repeating: 0, count: max(1, capacity))
        while true {
            let step = chunk.withUnsafeMutableBytes { raw -> (Int, Int32) in
                guard let base = raw.baseAddress else { return (0, 0) }
                if let ssl {
                    var got = 0
                    let ok = SSL_read_ex(ssl, base, raw.count, &got)
                    return ok == 1 ? (got, 0) : (-1, SSL_get_error(ssl, ok))
                }
                let n = recv(fd, base, raw.count, 0)
                return n >= 0 ? (n, 0) : (-1, errno)
            }
            if step.0 > 0 {
                buffer.append(contentsOf: chunk.prefix(step.0))
                return .done(step.0)
            }
            if step.0 == 0 && ssl == nil { return .closed }
            switch wait(after: step.1, writing: false, until: deadline) {
            case .ready: continue
            case let other: return other.result
            }
        }
    }

    private enum Wait {
        case ready
        case closed
        case timedOut
        case failed(String)

        var result: IOResult {
            switch self {
            case .ready: return .done(0)
            case .closed: return .closed
            case .timedOut: return .timedOut
            case let .failed(why): return .failed(why)
            }
        }
    }

    /// After a call that did not move bytes: wait for the socket when it asked to, else
    /// say why it stopped. `code` is SSL_get_error's for TLS, errno for plain TCP.
    private func wait(after code: Int32, writing: Bool, until deadline: Deadline) -> Wait {
        var events = writing ? Int16(POLLOUT) : Int16(POLLIN)
        if ssl != nil {
            switch code {
            case SSL_ERROR_WANT_READ: events = Int16(POLLIN)
            case SSL_ERROR_WANT_WRITE: events = Int16(POLLOUT)
            case SSL_ERROR_ZERO_RETURN: return .closed
            case SSL_ERROR_SYSCALL:
                let why = errno
                return why == 0 || why == ECONNRESET || why == EPIPE ? .closed : .failed(String(cString: strerror(why)))
            default:
                var text = [CChar](repeating: 0, count: 256)
                fa_ssl_error_text(&text, text.count)
                return .failed("TLS: " + cText(text))
            }
        } else if code == ECONNRESET || code == EPIPE {
            return .closed
        } else if code != EAGAIN && code != EWOULDBLOCK && code != EINTR {
            return .failed(String(cString: strerror(code)))
        }
        return ClientStream.poll(fd, events: events, until: deadline, watch: watch) ? .ready : .timedOut
    }

    /// Waits for `events` on `fd` until `deadline`, in slices that `watch` measures; false
    /// when the time ran out.
    static func poll(_ fd: Int32, events: Int16, until deadline: Deadline, watch: ProgressWatch) -> Bool {
        while true {
            watch.mark()
            let left = deadline.remaining
            if left == 0 || watch.abandon?() == true { return false }
            let slice = min(left, ProgressWatch.sliceMilliseconds)
            var entry = pollfd(fd: fd, events: events, revents: 0)
            watch.willSleep(slice)
            let n = Glibc.poll(&entry, 1, slice)
            if n > 0 { return true }
            if n < 0 && errno != EINTR { return true } // the next call reports the error
        }
    }
}

/// The TCP connection: the name resolved within the bound (`fa_resolve`), then each
/// address in turn, a non-blocking connect each, until one answers or the time runs out.
/// A failure says whose it is (`HTTPFailure.Kind`): the far end's refusal, no route and a
/// name server's answer are the network's word; an error of this host's own (no port, no
/// descriptor, no memory) is not, whatever the errno's usual meaning.
private func connectSocket(host: String, port: Int, until deadline: Deadline, watch: ProgressWatch) -> Result<
    Int32, HTTPFailure
> {
    let started = MonotonicInstant.now()
    var list: UnsafeMutablePointer<addrinfo>?
    var stalled = 0
    watch.mark()
    let status = fa_resolve(host, String(port), Int32(deadline.remaining), &list, &stalled)
    watch.measured(stalled)
    defer { if let list { freeaddrinfo(list) } }
    let spent = { MonotonicInstant.now().milliseconds - started.milliseconds }
    if status == FA_RESOLVE_TIMED_OUT {
        return .failure(.lookupTimedOut(host: host, milliseconds: spent()))
    }
    guard status == 0, list != nil else {
        return .failure(lookupFailure(host: host, status: status, until: deadline, watch: watch))
    }
    var errors: [Int32] = []
    var entry = list
    while let info = entry?.pointee {
        entry = info.ai_next
        let fd = socket(
            info.ai_family, info.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
            info.ai_protocol)
        guard fd >= 0 else {
            errors.append(errno)
            continue
        }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return .success(fd) }
        guard errno == EINPROGRESS else {
            errors.append(errno)
            close(fd)
            continue
        }
        guard ClientStream.poll(fd, events: Int16(POLLOUT), until: deadline, watch: watch) else {
            close(fd)
            return .failure(.connectTimedOut(host: host, port: port, milliseconds: spent()))
        }
        var soError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length) == 0 && soError == 0 { return .success(fd) }
        errors.append(soError == 0 ? errno : soError)
        close(fd)
    }
    // Any error of this host's own outweighs the network's word on another address.
    let last = errors.last ?? ECONNREFUSED
    let local = errors.first(where: { ![ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains($0) })
    let kind: HTTPFailure.Kind =
        local != nil ? .local : errors.allSatisfy({ $0 == ECONNREFUSED }) ? .refused : .noRoute
    let shown = local ?? last
    return .failure(.connectFailed(kind: kind, host: host, port: port, errorText: String(cString: strerror(shown))))
}

/// After a failed lookup: whether a name server answered (`fa_probe_dns`) — NXDOMAIN or no
/// address, SERVFAIL — or the network said there is no way to one; a query that could not
/// leave this host, or an error getaddrinfo itself calls local, is this host's problem.
private func lookupFailure(host: String, status: Int32, until deadline: Deadline, watch: ProgressWatch)
    -> HTTPFailure
{
    guard status == EAI_NONAME || status == EAI_AGAIN || status == EAI_FAIL || status == EAI_NODATA_VALUE else {
        return .lookupFailed(host: host, .failedHere(String(cString: gai_strerror(status))))
    }
    var detail: Int32 = 0
    var stalled = 0
    watch.mark()
    let probe = fa_probe_dns(host, min(Int32(deadline.remaining), 1500), &detail, &stalled)
    watch.measured(stalled)
    switch probe {
    case FA_PROBE_ANSWERED where detail == FA_PROBE_HAS_ADDRESSES: return .lookupFailed(host: host, .addressesElsewhere)
    case FA_PROBE_ANSWERED where detail == 3 || detail == 0: return .lookupFailed(host: host, .noSuchName)
    case FA_PROBE_ANSWERED: return .lookupFailed(host: host, .nameServerFailed(code: Int(detail)))
    case FA_PROBE_NO_ROUTE: return .lookupFailed(host: host, .noRoute(String(cString: strerror(detail))))
    case FA_PROBE_SILENT: return .lookupFailed(host: host, .silent)
    default:
        return .lookupFailed(
            host: host, .notSent(detail == 0 ? "no query could be made" : String(cString: strerror(detail))))
    }
}

/// glibc's EAI_NODATA (-5), hidden from Swift without _GNU_SOURCE.
private let EAI_NODATA_VALUE: Int32 = -5

/// The text of a NUL-terminated buffer C filled.
func cText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

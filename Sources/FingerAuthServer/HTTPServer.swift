import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif

/// Why the HTTP daemon could not start.
public struct ServerError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}

/// The libmicrohttpd daemon (MHD_start_daemon … MHD_stop_daemon), owned by this object:
/// an internal epoll thread pool, a connection timeout, connection and memory limits, TLS
/// from memory when given. Requests go to `AuthenticatorService`; this type only moves bytes.
public final class HTTPServer {
    /// Seconds a connection may stay idle.
    public static let connectionTimeout: UInt32 = 10
    /// Bodies between the service's cap and this size are read and dropped so that the
    /// client gets a clean 413; larger ones are cut off (413, then the connection closes).
    public static let drainLimit = 4 * 1024 * 1024

    private var daemon: OpaquePointer?
    private let dispatcher: RequestDispatcher
    /// MHD_OPTION_SOCK_ADDR, kept alive while the daemon runs.
    private let address: UnsafeMutableRawPointer
    /// NUL-terminated PEM copies for MHD_OPTION_HTTPS_MEM_KEY/CERT; the key is zeroed on free.
    private var keyPEM: UnsafeMutableBufferPointer<CChar>?
    private var certificatePEM: UnsafeMutableBufferPointer<CChar>?
    private static let tlsPriorities = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

    /// The port actually bound (differs from the requested one when that was 0).
    public let port: UInt16
    /// `https` with TLS material, else `http`.
    public let scheme: String

    /// Binds `listen` and starts serving `service` on `threads` worker threads.
    public init(service: AuthenticatorService, listen: ListenAddress, tls: TLSMaterial?, threads: UInt32 = 4) throws(ServerError) {
        dispatcher = RequestDispatcher(service: service)
        let storage = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<sockaddr_storage>.size,
                                                       alignment: MemoryLayout<sockaddr_storage>.alignment)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<sockaddr_storage>.size)
        address = storage
        let copied: Void? = listen.withSocketAddress { pointer, length in
            storage.copyMemory(from: UnsafeRawPointer(pointer), byteCount: Int(length))
        }
        scheme = tls == nil ? "http" : "https"
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ERROR_LOG.rawValue
        if listen.family == .ipv6 { flags |= MHD_USE_IPv6.rawValue }
        if let tls {
            flags |= MHD_USE_TLS.rawValue
            keyPEM = Self.cString(tls.keyPEM)
            certificatePEM = Self.cString(tls.certificatePEM)
        }
        guard copied != nil else {
            port = 0
            throw ServerError(message: "\(listen.host): not a numeric address")
        }
        var config = fa_mhd_config()
        config.flags = UInt32(flags)
        config.address = UnsafePointer(address.assumingMemoryBound(to: sockaddr.self))
        config.handler = accessHandler
        config.handler_cls = Unmanaged.passUnretained(dispatcher).toOpaque()
        config.completed = requestCompleted
        config.completed_cls = nil
        config.thread_pool_size = threads
        config.connection_timeout = Self.connectionTimeout
        config.connection_limit = 256
        config.per_ip_connection_limit = 64
        config.connection_memory_limit = 64 * 1024
        config.https_key_pem = keyPEM.flatMap { UnsafePointer($0.baseAddress) }
        config.https_cert_pem = certificatePEM.flatMap { UnsafePointer($0.baseAddress) }
        let started: OpaquePointer? = Self.tlsPriorities.withCString { priorities in
            config.https_priorities = priorities
            return fa_mhd_start_daemon(&config)
        }
        guard let started else {
            port = 0
            throw ServerError(message: "cannot listen on \(listen.urlHost):\(listen.port) (see the libmicrohttpd message above)")
        }
        daemon = started
        port = fa_mhd_bound_port(started)
    }

    /// Stops accepting, closes every connection and joins the worker threads (MHD_stop_daemon).
    public func stop() {
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
    }

    deinit {
        stop()
        address.deallocate()
        if let keyPEM {
            keyPEM.update(repeating: 0)
            keyPEM.deallocate()
        }
        certificatePEM?.deallocate()
    }

    private static func cString(_ bytes: [UInt8]) -> UnsafeMutableBufferPointer<CChar> {
        let buffer = UnsafeMutableBufferPointer<CChar>.allocate(capacity: bytes.count + 1)
        buffer.initialize(repeating: 0)
        for (i, b) in bytes.enumerated() { buffer[i] = CChar(bitPattern: b) }
        return buffer
    }
}

/// The per-request body being received, owned by MHD through `con_cls`
/// (Unmanaged.passRetained) and released in `requestCompleted`.
final class RequestState {
    var body: [UInt8] = []
    var received = 0
    var tooLarge = false
}

/// What the C callbacks reach through their closure pointer; the server keeps it alive
/// until MHD_stop_daemon has returned.
final class RequestDispatcher: Sendable {
    let service: AuthenticatorService

    init(service: AuthenticatorService) { self.service = service }

    /// Builds the request, asks the service, queues the answer (MHD_queue_response).
    func respond(_ connection: OpaquePointer, method: String, url: String, state: RequestState) -> MHD_Result {
        var peer = [CChar](repeating: 0, count: 64)
        let peerText = fa_mhd_peer_address(connection, &peer, peer.count) == 0 ? String(cString: peer) : "-"
        let request = HTTPRequest(method: method, path: url,
                                  authorization: header(connection, "Authorization"),
                                  contentType: header(connection, "Content-Type"),
                                  body: state.body, bodyTooLarge: state.tooLarge, peer: peerText)
        state.body = []
        let answer = service.handle(request)
        let created = answer.body.withUnsafeBytes { fa_mhd_response_copy($0.baseAddress, $0.count) }
        guard let response = created else { return .NO }
        defer { MHD_destroy_response(response) }
        if !answer.body.isEmpty { MHD_add_response_header(response, "Content-Type", "application/json") }
        MHD_add_response_header(response, "Cache-Control", "no-store")
        for (name, value) in answer.headers { MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(clamping: answer.status), response)
    }

    /// Lets the service audit and log a body cut off mid-upload; its answer is not sent.
    func refuseOversized(_ connection: OpaquePointer, method: String, url: String) {
        var peer = [CChar](repeating: 0, count: 64)
        let peerText = fa_mhd_peer_address(connection, &peer, peer.count) == 0 ? String(cString: peer) : "-"
        _ = service.handle(HTTPRequest(method: method, path: url, bodyTooLarge: true, peer: peerText))
    }

    func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }
}

/// MHD_AccessHandlerCallback: called once after the headers, once per body chunk, and
/// once more when the request is complete. Bodies past the service's cap are counted but
/// not kept.
private func accessHandler(cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
                           url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                           version: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?,
                           uploadDataSize: UnsafeMutablePointer<Int>?,
                           conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let cls, let connection, let url, let method, let uploadDataSize, let conCls else { return .NO }
    let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
    let methodText = String(cString: method)
    let urlText = String(cString: url)
    guard let raw = conCls.pointee else {
        let state = RequestState()
        conCls.pointee = Unmanaged.passRetained(state).toOpaque()
        // A body announced beyond what we are willing to drain: answer now; MHD discards
        // the rest and closes the connection after the answer.
        if let length = dispatcher.header(connection, "Content-Length").flatMap({ Int($0) }),
           length > HTTPServer.drainLimit {
            state.tooLarge = true
            return dispatcher.respond(connection, method: methodText, url: urlText, state: state)
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
    let size = uploadDataSize.pointee
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
    return dispatcher.respond(connection, method: methodText, url: urlText, state: state)
}

/// MHD_RequestCompletedCallback: releases the request's `RequestState`.
private func requestCompleted(cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
                              conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                              toe: MHD_RequestTerminationCode) {
    guard let conCls, let raw = conCls.pointee else { return }
    Unmanaged<RequestState>.fromOpaque(raw).release()
    conCls.pointee = nil
}

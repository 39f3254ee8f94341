import CCurl
import FingerAuthCore

/// How to reach the authenticator: TLS settings and the bounds on every request.
public struct HTTPSettings: Sendable {
    public var allowHTTP = false
    public var caFile: String?
    public var pinnedPublicKey: String?
    public var connectTimeoutMilliseconds = 2000
    public var totalTimeoutMilliseconds = 5000
    public var maxResponseBytes = 16 * 1024

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

/// One HTTPS request through libcurl, hardened for use by the helper and the command line:
/// no redirects, no proxy from the environment, no signals, peer and host verified, bounded
/// time and size.
public enum HTTPClient {
    public static func send(method: String, url: String, body: [UInt8]?, headers: [String] = [],
                            settings: HTTPSettings) -> Result<HTTPResponse, HTTPFailure> {
        guard let connection = HTTPConnection(settings: settings) else {
            return .failure(HTTPFailure(kind: .other, message: "libcurl unavailable"))
        }
        return connection.send(method: method, url: url, body: body, headers: headers)
    }
}

/// One libcurl easy handle kept across requests, so that a second request to the same
/// server reuses the connection (DNS, TCP and the TLS handshake) of the first. libcurl
/// opens a new connection by itself when the server closed the kept one. Use it from one
/// thread at a time.
public final class HTTPConnection {
    let handle: CurlHandle
    public var settings: HTTPSettings

    public init?(settings: HTTPSettings) {
        guard let handle = CurlHandle() else { return nil }
        self.handle = handle
        self.settings = settings
    }

    /// One request. Every option is set anew on a handle reset first (`curl_easy_reset`
    /// keeps the open connection, the DNS and TLS session caches): nothing of the previous
    /// request carries over. (libcurl turns a handle into POST whenever `CURLOPT_POSTFIELDS`
    /// is set, even to NULL as done after each request so that no pointer to a freed body
    /// stays behind; a later request that did not set its method would go out as a POST
    /// whose body libcurl reads from standard input.) A GET has no body and no body headers.
    public func send(method: String, url: String, body: [UInt8]?, headers: [String] = []) -> Result<HTTPResponse, HTTPFailure> {
        let sink = ResponseSink(limit: settings.maxResponseBytes)
        let context = Unmanaged.passUnretained(sink).toOpaque()
        let c = handle.pointer
        curl_easy_reset(c)
        let sendsBody = method == "POST" || (method != "GET" && body != nil)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        for header in (sendsBody ? ["Content-Type: application/json"] : []) + ["Accept: application/json", "Expect:"] + headers {
            headerList = curl_slist_append(headerList, header)
        }

        var ok = true
        ok = ok && fa_curl_setopt_string(c, CURLOPT_URL, url) == CURLE_OK
        ok = ok && fa_curl_setopt_string(c, CURLOPT_PROTOCOLS_STR, settings.allowHTTP ? "http,https" : "https") == CURLE_OK
        ok = ok && fa_curl_setopt_long(c, CURLOPT_FOLLOWLOCATION, 0) == CURLE_OK
        ok = ok && fa_curl_setopt_string(c, CURLOPT_PROXY, "") == CURLE_OK
        ok = ok && fa_curl_setopt_string(c, CURLOPT_NOPROXY, "*") == CURLE_OK
        ok = ok && fa_curl_setopt_long(c, CURLOPT_NOSIGNAL, 1) == CURLE_OK
        // Without it libcurl 7.88 waits for its resolver thread when it gives up, that is for
        // the resolver's own timeouts (10 s with a silent name server), not for ours.
        ok = ok && fa_curl_setopt_long(c, CURLOPT_QUICK_EXIT, 1) == CURLE_OK
        ok = ok && fa_curl_setopt_long(c, CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMilliseconds) == CURLE_OK
        ok = ok && fa_curl_setopt_long(c, CURLOPT_TIMEOUT_MS, settings.totalTimeoutMilliseconds) == CURLE_OK
        ok = ok && fa_curl_setopt_long(c, CURLOPT_SSL_VERIFYPEER, 1) == CURLE_OK
        ok = ok && fa_curl_setopt_long(c, CURLOPT_SSL_VERIFYHOST, 2) == CURLE_OK
        ok = ok && fa_curl_setopt_long(c, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2) == CURLE_OK
        ok = ok && fa_curl_setopt_string(c, CURLOPT_USERAGENT, "fingerauth/0.1") == CURLE_OK
        ok = ok && fa_curl_setopt_slist(c, CURLOPT_HTTPHEADER, headerList) == CURLE_OK
        ok = ok && fa_curl_setopt_write_function(c, responseWriter) == CURLE_OK
        ok = ok && fa_curl_setopt_pointer(c, CURLOPT_WRITEDATA, context) == CURLE_OK
        ok = ok && fa_curl_setopt_header_function(c, headerReader) == CURLE_OK
        ok = ok && fa_curl_setopt_pointer(c, CURLOPT_HEADERDATA, context) == CURLE_OK
        ok = ok && fa_curl_setopt_pointer(c, CURLOPT_ERRORBUFFER, handle.errorBuffer) == CURLE_OK
        if let caFile = settings.caFile {
            ok = ok && fa_curl_setopt_string(c, CURLOPT_CAINFO, caFile) == CURLE_OK
        }
        if let pin = settings.pinnedPublicKey {
            ok = ok && fa_curl_setopt_string(c, CURLOPT_PINNEDPUBLICKEY, pin) == CURLE_OK
        }
        switch method {
        case "GET": ok = ok && fa_curl_setopt_long(c, CURLOPT_HTTPGET, 1) == CURLE_OK
        case "POST": break  // POSTFIELDS below makes it a POST
        default: ok = ok && fa_curl_setopt_string(c, CURLOPT_CUSTOMREQUEST, method) == CURLE_OK
        }
        guard ok else { return .failure(HTTPFailure(kind: .other, message: "libcurl refused an option")) }
        handle.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

        let code: CURLcode = HTTPClient.withBody(body ?? []) { pointer, count in
            if sendsBody {
                guard fa_curl_setopt_long(c, CURLOPT_POSTFIELDSIZE, count) == CURLE_OK,
                      fa_curl_setopt_pointer(c, CURLOPT_POSTFIELDS, pointer) == CURLE_OK else { return CURLE_FAILED_INIT }
            }
            let code = curl_easy_perform(c)
            // The body lives only for this call: libcurl must not keep a pointer to it.
            _ = fa_curl_setopt_pointer(c, CURLOPT_POSTFIELDS, nil)
            return code
        }
        if sink.overflowed {
            return .failure(HTTPFailure(kind: .tooLarge, message: "answer larger than \(settings.maxResponseBytes) bytes"))
        }
        guard code == CURLE_OK else { return .failure(HTTPClient.failure(code, handle: handle, url: url)) }
        var status = 0
        _ = fa_curl_getinfo_long(c, CURLINFO_RESPONSE_CODE, &status)
        return .success(HTTPResponse(status: status, body: sink.bytes, date: sink.date))
    }
}

extension HTTPClient {
    /// The body in memory that lives for the call, never at a NULL address (an empty
    /// array may have none, and NULL postfields make libcurl read the body from stdin).
    static func withBody(_ body: [UInt8], _ run: (UnsafeMutableRawPointer?, Int) -> CURLcode) -> CURLcode {
        var copy = body + [0]
        return copy.withUnsafeMutableBytes { run($0.baseAddress, body.count) }
    }

    static func failure(_ code: CURLcode, handle: CurlHandle, url: String) -> HTTPFailure {
        let detail = handle.errorText.isEmpty ? String(cString: curl_easy_strerror(code)) : handle.errorText
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST:
            return HTTPFailure(kind: .refused, message: "cannot connect to the authenticator: \(detail)")
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPFailure(kind: .timeout, message: "authenticator timed out: \(detail)")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR:
            return HTTPFailure(kind: .tls, message: "TLS failure with the authenticator: \(detail)")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return HTTPFailure(kind: .other, message: "protocol not allowed: \(detail)")
        default:
            return HTTPFailure(kind: .other, message: "request to the authenticator failed: \(detail)")
        }
    }
}

/// Owns a `CURL *` (curl_easy_cleanup in deinit) and its error buffer.
final class CurlHandle {
    let pointer: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>

    init?() {
        guard let p = curl_easy_init() else { return nil }
        pointer = p
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    var errorText: String { String(cString: errorBuffer) }

    deinit {
        curl_easy_cleanup(pointer)
        errorBuffer.deallocate()
    }
}

/// Collects the answer body up to a limit; past it the transfer is aborted.
final class ResponseSink {
    let limit: Int
    var bytes: [UInt8] = []
    var overflowed = false
    var date: String?
    init(limit: Int) { self.limit = limit }
}

/// Keeps the `Date` header (one line per call; at most 256 bytes looked at).
private let headerReader: fa_curl_write_callback = { data, size, count, context in
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard let data, let context, !overflow else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = min(total, 256)
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.lowercased().hasPrefix("date:") {
        sink.date = String(line.dropFirst(5).drop(while: { $0 == " " }).prefix(while: { !$0.isNewline }))
    }
    return total
}

private let responseWriter: fa_curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow, total <= sink.limit - sink.bytes.count else {
        sink.overflowed = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: total) { sink.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: total)) }
    return total
}

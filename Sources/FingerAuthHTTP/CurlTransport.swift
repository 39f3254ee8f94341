import FingerAuthCore

/// The module's transport: `POST` of the login JSON to `url` with the configured TLS.
public struct CurlTransport: AuthenticatorTransport {
    public init() {}

    public func post(json: [UInt8], options: Options) -> TransportResult {
        guard let url = options.url else { return .failed("url is not set") }
        switch HTTPClient.send(method: "POST", url: url.text, body: json, settings: HTTPSettings(options: options)) {
        case let .success(response): return .answered(status: response.status, body: response.body)
        case let .failure(failure): return .failed(failure.message)
        }
    }
}

import FingerAuthCore
import FingerAuthHTTP
import FingerAuthLoginDomain

/// The configured HTTP client (`cafile`, `pinned_pubkey`, `allow_http`; no proxy, nothing
/// from the environment), as `register` and `test` use it, as the approval client's
/// transport: one kept connection, its bound stretched over a long poll's park.
package final class ApprovalHTTP: ApprovalTransport {
    private let connection: HTTPConnection
    /// Beyond the server's park: the round trip and a TLS handshake.
    static let marginMilliseconds = 5000

    package init(options: Options) {
        connection = HTTPConnection(settings: HTTPSettings(options: options))
    }

    package func exchange(_ method: String, _ url: String, body: [UInt8]?, bearer: String?, parkSeconds: Int)
        -> Result<ApprovalReply, ApprovalFailure>
    {
        connection.settings.totalTimeoutMilliseconds =
            Self.marginMilliseconds + min(max(parkSeconds, 0), 3600) * 1000
        let path = url.prefix(while: { $0 != "?" })
        return connection.send(
            method: method, url: url, body: body, headers: bearer.map { ["Authorization: Bearer " + $0] } ?? []
        )
        .map { ApprovalReply(status: $0.status, body: $0.body, date: $0.date) }
        .mapError { failure in
            let text = failure.message.contains("authenticator") ? failure.message : "authenticator: " + failure.message
            return ApprovalFailure("\(text) (\(method) \(path))")
        }
    }
}

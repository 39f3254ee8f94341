import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthSystem

/// The authenticator as the command line talks to it: its URLs (next to the configured
/// login URL), this host's enrollment token, and the key endpoints that need it.
struct Authenticator {
    let options: Options

    /// `scheme://authority` of the login URL.
    var origin: String {
        let login = options.url?.text ?? ""
        let scheme = login.hasPrefix("https://") ? "https://" : "http://"
        let authority = login.dropFirst(scheme.count).prefix(while: { $0 != "/" && $0 != "?" })
        return scheme + authority
    }

    /// `…/v1/keys` next to the login URL (`…/v1/login`), else at the URL's origin.
    var keysURL: String {
        let login = options.url?.text ?? ""
        if login.hasSuffix("/v1/login") { return String(login.dropLast("/v1/login".count)) + "/v1/keys" }
        return origin + "/v1/keys"
    }

    /// `…/healthz` at the origin.
    var healthURL: String { origin + "/healthz" }

    /// This host's enrollment token (root 0600), whitespace removed. Never printed.
    func hostToken() throws(CommandError) -> String {
        var token: [UInt8]
        do {
            token = try SafeFile.read(options.tokenFile, rule: .secret)
        } catch {
            throw CommandError("host enrollment token: \(error) (create one on the authenticator: "
                + "fingerauthd token create --host \(hostID), then install it: "
                + "install -m 0600 /dev/stdin \(options.tokenFile))")
        }
        defer { wipe(&token) }
        return String(decoding: token, as: UTF8.self).filter { !$0.isWhitespace }
    }

    /// `host_id`, else the host name.
    var hostID: String { options.hostID ?? currentHostName() }

    /// One request with the configured TLS settings.
    func send(_ method: String, _ url: String, body: [UInt8]? = nil, token: String? = nil) -> Result<HTTPResponse, HTTPFailure> {
        HTTPClient.send(method: method, url: url, body: body,
                        headers: token.map { ["Authorization: Bearer " + $0] } ?? [],
                        settings: HTTPSettings(options: options))
    }

    /// How a `DELETE /v1/keys/<kid>` ended.
    enum RevokeResult: Equatable {
        case revoked
        /// The authenticator does not know the key (404): nothing to revoke there.
        case unknown
    }

    /// Revokes `kid` at the authenticator with the host token (`DELETE /v1/keys/<kid>`).
    func revoke(kid: String) throws(CommandError) -> RevokeResult {
        let token = try hostToken()
        let url = keysURL + "/" + kid
        switch send("DELETE", url, token: token) {
        case let .failure(failure):
            throw CommandError("\(failure.message) (url \(url))", unreachable: true)
        case let .success(response):
            switch response.status {
            case 200, 204: return .revoked
            case 404: return .unknown
            case 401: throw CommandError("the authenticator refused this host's enrollment token (\(options.tokenFile))")
            case 403: throw CommandError("key \(kid) belongs to another host at the authenticator; ask its admin to revoke it")
            default: throw CommandError("the authenticator answered \(response.status) to DELETE \(url): \(Self.reason(response))")
            }
        }
    }

    /// The `error` member of a JSON answer, or a placeholder.
    static func reason(_ response: HTTPResponse) -> String {
        (try? JSONParser().parse(response.body))?["error"]?.stringValue.map(printable) ?? "no reason given"
    }

    /// At most 80 printable ASCII characters of text from the network.
    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(80))
    }
}

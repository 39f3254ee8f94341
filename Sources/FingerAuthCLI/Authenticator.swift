import FingerAuthApproval
import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthSystem

/// The authenticator as the command line talks to it: its URLs (next to the configured
/// login URL), this host's enrollment token, and the key endpoints that need it.
struct Authenticator {
    let options: Options

    /// `scheme://authority` of the login URL.
    var origin: String { AuthenticatorAddress(options: options).origin }

    /// `…/v1/keys` next to the login URL (`…/v1/login`), else at the URL's origin.
    var keysURL: String { AuthenticatorAddress(options: options).apiBase + "/v1/keys" }

    /// `…/v1/hosts/keys` beside the keys URL.
    var hostKeysURL: String {
        String(keysURL.dropLast("/v1/keys".count)) + "/v1/hosts/keys"
    }

    /// `…/v1/policy/check` beside the keys URL.
    var policyCheckURL: String {
        String(keysURL.dropLast("/v1/keys".count)) + "/v1/policy/check"
    }

    /// The refusal text for a 403 `policy_denied` answer (with the rule's id when given), or
    /// nil when the answer is something else.
    static func policyRefusal(_ response: HTTPResponse, user: String, host: String) -> String? {
        guard response.status == 403, let json = try? JSONParser().parse(response.body),
            json["error"]?.stringValue == "policy_denied"
        else { return nil }
        return policyText(user: user, host: host, rule: json["rule"]?.int64Value)
    }

    /// What a registration refused by the policy tells the admin on the host.
    static func policyText(user: String, host: String, rule: Int64?) -> String {
        let named = rule.map { " (rule \($0))" } ?? ""
        return "the authenticator's policy does not allow a key for \(user) on \(printable(host))\(named); "
            + "its admin can see why: fingerauthd policy test --stage registration --user \(user) --host \(printable(host))"
    }

    /// What `POST /v1/policy/check` said about `user` (with `service`: a login; without:
    /// a registration) on this host.
    enum PolicyAnswer: Equatable {
        case allowed
        /// 403 `policy_denied`, with the deciding rule's id when the answer named it.
        case denied(rule: Int64?)
        /// Unreachable, or another status (an older authenticator, 5xx): it could not say.
        case unknown(status: Int?)
    }

    /// Asks the authenticator's policy with the host `token`; read-only on its side.
    func checkPolicy(user: String, service: String? = nil, token: String) -> PolicyAnswer {
        var members: [(String, JSONValue)] = [("user", .string(user))]
        if let service { members.append(("service", .string(service))) }
        guard
            case let .success(response) = send(
                "POST", policyCheckURL, body: JSONEncoding.encodeBytes(.object(members)),
                token: token)
        else { return .unknown(status: nil) }
        let json = try? JSONParser().parse(response.body)
        switch response.status {
        case 200: return .allowed
        case 403 where json?["error"]?.stringValue == "policy_denied": return .denied(rule: json?["rule"]?.int64Value)
        default: return .unknown(status: response.status)
        }
    }

    /// `…/healthz` at the origin.
    var healthURL: String { AuthenticatorAddress(options: options).healthURL }

    /// This host's enrollment token (root 0600), whitespace removed. Never printed.
    func hostToken() throws(CommandError) -> String {
        var token: [UInt8]
        do {
            token = try SafeFile.read(options.tokenFile, rule: .secret)
        } catch {
            throw CommandError(
                "host enrollment token: \(error) (create one on the authenticator: "
                    + "fingerauthd token create --host \(hostID), then install it: "
                    + "install -m 0600 /dev/stdin \(options.tokenFile))")
        }
        defer { wipe(&token) }
        return String(decoding: token, as: UTF8.self).filter { !$0.isWhitespace }
    }

    /// `host_id`, else the host name.
    var hostID: String { AuthenticatorAddress(options: options).issuer }

    /// One request with the configured TLS settings.
    func send(_ method: String, _ url: String, body: [UInt8]? = nil, token: String? = nil) -> Result<
        HTTPResponse, HTTPFailure
    > {
        HTTPClient.send(
            method: method, url: url, body: body,
            headers: token.map { ["Authorization: Bearer " + $0] } ?? [],
            settings: HTTPSettings(options: options))
    }

    /// How a `DELETE /v1/keys/<kid>` ended.
    enum RevokeResult: Equatable {
        case revoked
        /// The authenticator does not know the key (404): nothing to revoke there.
        case unknown
    }

    /// Revokes `kid` at the authenticator (`DELETE /v1/keys/<kid>`) with the host token; when
    /// that cannot be read and `holder` is the key itself (for `user`), with a short-lived JWT
    /// signed by it instead (fingerauthd accepts either).
    func revoke(kid: String, holder: DeviceKey? = nil, user: String? = nil) throws(CommandError) -> RevokeResult {
        let credential: String
        var signedByKey = false
        do {
            credential = try hostToken()
        } catch {
            guard let holder, holder.kid == kid, let user, let jwt = keyHolderToken(holder, user: user) else {
                throw error
            }
            credential = jwt
            signedByKey = true
        }
        let url = keysURL + "/" + kid
        switch send("DELETE", url, token: credential) {
        case let .failure(failure):
            throw CommandError("\(failure.message) (url \(url))", unreachable: true)
        case let .success(response):
            switch response.status {
            case 200, 204: return .revoked
            case 404: return .unknown
            case 401 where signedByKey:
                throw CommandError(
                    "the authenticator refused the request signed by key \(kid): \(Self.reason(response))")
            case 401:
                throw CommandError("the authenticator refused this host's enrollment token (\(options.tokenFile))")
            case 403:
                throw CommandError(
                    "key \(kid) belongs to another host at the authenticator; ask its admin to revoke it")
            default:
                throw CommandError(
                    "the authenticator answered \(response.status) to DELETE \(url): \(Self.reason(response))")
            }
        }
    }

    /// A 60-second RS256 token signed by `key` for `user`, as a key holder's credential.
    private func keyHolderToken(_ key: DeviceKey, user: String) -> String? {
        guard let jti = SystemRandom().bytes(16) else { return nil }
        var claims = LoginClaims(
            issuer: hostID, subject: user, audience: options.effectiveAudience,
            issuedAt: SystemClock().now(), ttlSeconds: 60, jti: Base64URL.encode(jti),
            service: "fingerauth-revoke")
        claims.hardwareKey = key.isHardware
        let input = CompactJWT.signingInput(
            header: LoginClaims.header(kid: key.kid, typ: TokenType.keyRevocation),
            claims: claims.json)
        guard let signature = key.signRS256(input) else { return nil }
        return CompactJWT.serialize(signingInput: input, signature: signature)
    }

    /// A registration's proof: a 60-second RS256 token of `type` signed by the `key` being
    /// registered, issued by this host for `subject` (a user, or for a host key the host).
    func proof(signedBy key: DeviceKey, type: String, subject: String, now: Int64) throws(CommandError) -> String {
        guard let jti = SystemRandom().bytes(16) else { throw CommandError("no random bytes") }
        let claims: JSONValue = .object([
            ("iss", .string(hostID)), ("sub", .string(subject)), ("aud", .string(options.effectiveAudience)),
            ("iat", .integer(now)), ("exp", .integer(now + 60)), ("jti", .string(Base64URL.encode(jti))),
        ])
        let input = CompactJWT.signingInput(header: LoginClaims.header(kid: key.kid, typ: type), claims: claims)
        guard let signature = key.signRS256(input) else { throw CommandError("signing the proof failed") }
        return CompactJWT.serialize(signingInput: input, signature: signature)
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

import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// Where the authenticator's API lives, from the configured login URL, and who this host is
/// to it: what the command line and the watcher both need.
package struct AuthenticatorAddress {
    package let options: Options

    package init(options: Options) { self.options = options }

    /// `scheme://authority` of the login URL.
    package var origin: String {
        let login = options.url?.text ?? ""
        let scheme = login.hasPrefix("https://") ? "https://" : "http://"
        let authority = login.dropFirst(scheme.count).prefix(while: { $0 != "/" && $0 != "?" })
        return scheme + authority
    }

    /// The prefix under which `/v1/…` lives: the login URL without its `/v1/login`, else its origin.
    package var apiBase: String {
        let login = options.url?.text ?? ""
        if login.hasSuffix("/v1/login") { return String(login.dropLast("/v1/login".count)) }
        return origin
    }

    /// `…/healthz` at the origin.
    package var healthURL: String { origin + "/healthz" }

    /// `host_id`, else the host name: the `iss` of this host's tokens.
    package var issuer: String { options.hostID ?? currentHostName() }

    /// `user`'s approval client over the configured HTTP client, signing with `key`.
    package func approvalClient<Signer: TokenSigner>(user: String, key: Signer) -> ApprovalClient<
        ApprovalHTTP, Signer
    > {
        ApprovalClient(
            transport: ApprovalHTTP(options: options), signer: key, base: apiBase, clockURL: healthURL,
            issuer: issuer, user: user, audience: options.effectiveAudience, localClock: SystemClock(),
            random: SystemRandom())
    }
}

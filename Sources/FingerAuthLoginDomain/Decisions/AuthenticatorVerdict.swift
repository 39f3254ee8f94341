import FingerAuthCore

/// What the authenticator's answer to `POST /v1/login` means for this login.
package enum AuthenticatorVerdict: Equatable, Sendable {
    /// 2xx with `{"ok":true}` for this user and this token.
    case accepted
    /// The authenticator said no (401/403/400, `ok` false, or yes for another user or
    /// token): why, as a code (which chooses the person's text) and as a text for the log.
    case rejected(RefusalCode, String)
    /// The authenticator could not answer properly (5xx, redirect, 429, unreadable body).
    case unavailable(String)

    /// Largest answer body read.
    package static let maxBodyBytes = 16 * 1024

    /// Only `ok` true together with our own `sub`, `jti` and `kid`, each equal byte for byte,
    /// counts as a yes.
    package static func interpret(status: Int, body: [UInt8], user: String, jti: String, kid: String)
        -> AuthenticatorVerdict
    {
        switch status {
        case 200..<300:
            guard let json = try? JSONParser(maxBytes: maxBodyBytes, maxDepth: 8).parse(body),
                let ok = json["ok"]?.boolValue
            else {
                return .unavailable("authenticator answered \(status) with an unreadable body")
            }
            guard ok else { return .rejected(.otherAnswer, "authenticator answered ok=false") }
            guard let sub = json["sub"]?.stringValue, sameBytes(sub, user) else {
                return .rejected(.otherAnswer, "authenticator accepted another user")
            }
            guard let answeredJTI = json["jti"]?.stringValue, sameBytes(answeredJTI, jti) else {
                return .rejected(.otherAnswer, "authenticator accepted another token")
            }
            guard let answeredKID = json["kid"]?.stringValue, sameBytes(answeredKID, kid) else {
                return .rejected(.otherAnswer, "authenticator accepted another key")
            }
            return .accepted
        case 400, 401, 403:
            let json = try? JSONParser(maxBytes: maxBodyBytes, maxDepth: 8).parse(body)
            let reason = json?["error"]?.stringValue
            // 403 policy_denied names the policy rule that refused: shown in the log line.
            let rule =
                status == 403 && reason == "policy_denied" ? json?["rule"]?.int64Value.map { ", rule \($0)" } : nil
            return .rejected(
                RefusalCode(status: status, error: reason),
                "authenticator refused (\(status)\(reason.map { ": " + printable($0) } ?? "")\(rule ?? ""))")
        case 300..<400:
            return .unavailable("authenticator redirected (\(status)); redirects are not followed")
        default:
            return .unavailable("authenticator answered \(status)")
        }
    }

    private static func printable(_ s: String) -> String {
        String(String(s.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(80))
    }
}

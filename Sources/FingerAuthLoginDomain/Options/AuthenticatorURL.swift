import FingerAuthCore

/// The authenticator's address, checked: `https://host[:port]/path`, or `http://` to a
/// loopback host when `allow_http` is set. No user info, no spaces, no fragment.
package struct AuthenticatorURL: Equatable, Sendable {
    package let text: String
    package let isHTTPS: Bool
    package let host: String
    /// The port written in the URL, if any.
    package let port: Int?

    /// The port connected to: the written one, else 443 (https) or 80 (http).
    package var effectivePort: Int { port ?? (isHTTPS ? 443 : 80) }

    /// Nil with a reason when the text is not an acceptable URL.
    package static func parse(_ text: String) -> Result<AuthenticatorURL, ConfigError> {
        func fail(_ m: String) -> Result<AuthenticatorURL, ConfigError> {
            .failure(ConfigError(source: "url", key: "url", message: m))
        }
        guard text.utf8.count <= 2048 else { return fail("longer than 2048 bytes") }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else {
            return fail("contains spaces or non-ASCII characters")
        }
        let isHTTPS: Bool
        let rest: Substring
        if text.hasPrefix("https://") {
            isHTTPS = true
            rest = text.dropFirst(8)
        } else if text.hasPrefix("http://") {
            isHTTPS = false
            rest = text.dropFirst(7)
        } else {
            return fail("must start with https://")
        }
        let authority = rest.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        guard !authority.isEmpty else { return fail("has no host") }
        guard !authority.contains("@") else { return fail("must not contain user information") }
        guard !text.contains("#") else { return fail("must not contain a fragment") }
        var host: Substring
        var port: Int? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return fail("has a malformed IPv6 host") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || (after.hasPrefix(":") && isPort(after.dropFirst())) else {
                return fail("has a malformed port")
            }
            if !after.isEmpty { port = Int(after.dropFirst()) }
        } else {
            let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return fail("has a malformed host") }
            host = parts[0]
            if parts.count == 2 {
                guard isPort(parts[1]) else { return fail("has a malformed port") }
                port = Int(parts[1])
            }
        }
        guard !host.isEmpty else { return fail("has no host") }
        return .success(
            AuthenticatorURL(text: text, isHTTPS: isHTTPS, host: String(host).asciiLowercased(), port: port))
    }

    /// 127.0.0.0/8, ::1 or localhost.
    package var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { UInt8($0) != nil }
    }

    private static func isPort(_ s: Substring) -> Bool {
        guard let p = Int(s), p > 0, p < 65536, s.count <= 5 else { return false }
        return true
    }
}

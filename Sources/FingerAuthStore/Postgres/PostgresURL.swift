import FingerAuthDomain

/// What fingerauthd checks in a `postgresql://` URL before it connects.
package enum PostgresURL {
    /// Why `url` may not be used as it is, or nil: a database on another machine must be
    /// reached with an explicit `sslmode` (libpq's default, `prefer`, silently falls back to
    /// plain text and checks no certificate).
    package static func transportProblem(_ url: String) -> String? {
        let parameters = query(url)
        if parameters.contains(where: { $0.0 == "sslmode" }) { return nil }
        let hosts =
            self.hosts(url)
            + parameters.filter { $0.0 == "host" || $0.0 == "hostaddr" }
            .flatMap { $0.1.split(separator: ",").map(String.init) }
        let remote = hosts.filter { !isLocal($0) }
        guard let first = remote.first else { return nil }
        return "postgresql: \(LogHost.clean(first)) is not on this machine and the URL names no sslmode: "
            + "add sslmode=verify-full (with sslrootcert=FILE) to reach it over verified TLS, "
            + "or name an explicit weaker mode (sslmode=require) if you accept the risk"
    }

    /// The hosts of the URL's authority (`user:pw@h1:5432,h2/db`), without ports.
    package static func hosts(_ url: String) -> [String] {
        let bytes = Array(url.utf8)
        guard
            let schemeEnd = (0..<max(0, bytes.count - 2)).first(where: {
                bytes[$0] == UInt8(ascii: ":") && bytes[$0 + 1] == UInt8(ascii: "/")
                    && bytes[$0 + 2] == UInt8(ascii: "/")
            })
        else { return [] }
        var rest = Substring(String(decoding: bytes[(schemeEnd + 3)...], as: UTF8.self))
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return rest.split(separator: ",", omittingEmptySubsequences: false).map { part in
            if part.hasPrefix("["), let close = part.firstIndex(of: "]") {
                return String(part[part.index(after: part.startIndex)..<close])
            }
            return String(part.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        }
    }

    /// The URL's query parameters, percent-decoded.
    package static func query(_ url: String) -> [(String, String)] {
        guard let mark = url.firstIndex(of: "?") else { return [] }
        return url[url.index(after: mark)...].split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decode(parts.first ?? ""), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// Empty (the default socket), a socket directory, `localhost` or a loopback address.
    package static func isLocal(_ host: String) -> Bool {
        let decoded = decode(host[...])
        return decoded.isEmpty || decoded.hasPrefix("/") || decoded == "localhost" || decoded == "::1"
            || decoded.hasPrefix("127.")
    }

    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A host name from a URL, made safe to print.
enum LogHost {
    static func clean(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.prefix(128).map {
                    $0.value > 0x20 && $0.value < 0x7f ? $0 : "?"
                }))
    }
}

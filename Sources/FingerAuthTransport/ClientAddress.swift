import FingerAuthDomain

#if canImport(Glibc)
import Glibc
#endif

/// One network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, or a single address).
package struct Network: Sendable, Equatable {
    let bytes: [UInt8]
    let prefix: Int

    /// Parses `text`; nil when it is not an IPv4 or IPv6 address with an optional prefix length.
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = parts.first, let bytes = ClientAddress.parse(String(address)) else { return nil }
        let width = bytes.count * 8
        var prefix = width
        if parts.count == 2 {
            guard let value = Int(parts[1]), value >= 0, value <= width, parts[1].utf8.count <= 3 else { return nil }
            prefix = value
        }
        self.bytes = bytes
        self.prefix = prefix
    }

    /// Whether `address` (4 or 16 bytes) lies in this network.
    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == bytes.count else { return false }
        var left = prefix
        for (a, b) in zip(address, bytes) {
            if left <= 0 { return true }
            let mask: UInt8 = left >= 8 ? 0xff : UInt8(truncatingIfNeeded: 0xff << (8 - left))
            if a & mask != b & mask { return false }
            left -= 8
        }
        return true
    }
}

/// Which address a request is counted against. The TCP peer, unless the peer is one of
/// the configured `trusted-proxies`: then the right-most address of `X-Forwarded-For`
/// that is not itself a trusted proxy (what a load balancer appends is trusted; what a
/// client wrote to the left of it is not). Every `X-Forwarded-For` line counts, in the
/// order received, as one list (`HTTPServer.headerList`): a proxy that appends a line of
/// its own rather than extending the client's must not leave the client's line to count.
/// IPv6 clients are counted by their /64, since one host commonly holds a whole /64.
package struct ClientAddress: Sendable {
    package let trustedProxies: [Network]

    package init(trustedProxies: [Network] = []) {
        self.trustedProxies = trustedProxies
    }

    /// The address to count `peer` (and its `forwardedFor` list, every header line joined
    /// with commas) against, as text.
    package func resolve(peer: String, forwardedFor: String?) -> String {
        // The usual case, on every request: no proxies, an IPv4 peer already in inet_ntop's form.
        if trustedProxies.isEmpty && !peer.utf8.contains(UInt8(ascii: ":")) { return peer }
        guard let peerBytes = Self.parse(peer) else { return peer }
        var client = peerBytes
        if isTrusted(peerBytes), let forwardedFor {
            for entry in forwardedFor.split(separator: ",").reversed() {
                guard let hop = Self.parse(String(entry.trimmingSpaces)) else { break }
                client = hop
                if !isTrusted(hop) { break }
            }
        }
        return Self.text(Self.limitKey(client))
    }

    private func isTrusted(_ address: [UInt8]) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// IPv4-mapped IPv6 as IPv4; other IPv6 cut to its /64.
    static func limitKey(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 16 else { return bytes }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return Array(bytes[12...])
        }
        return Array(bytes[0..<8]) + [UInt8](repeating: 0, count: 8)
    }

    /// 4 or 16 bytes for an IPv4 or IPv6 address in text (inet_pton), else nil.
    static func parse(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// inet_ntop of 4 or 16 bytes.
    static func text(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        return ok ? String(cString: buffer) : "-"
    }

    /// Parses a `trusted-proxies` value: networks separated by commas or spaces.
    package static func networks(_ text: String) -> [Network]? {
        var out: [Network] = []
        for word in text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
            guard let network = Network(String(word)) else { return nil }
            out.append(network)
        }
        return out
    }
}

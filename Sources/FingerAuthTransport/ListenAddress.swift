#if canImport(Glibc)
import Glibc
#endif

/// A numeric IPv4 or IPv6 address and a port, as `--listen` takes it: `127.0.0.1:8443`,
/// `[::1]:8443`. Port 0 lets the kernel pick one.
package struct ListenAddress: Sendable, Equatable {
    package enum Family: Sendable { case ipv4, ipv6 }

    /// The address text without brackets, and the port.
    package let host: String
    package let port: UInt16
    package let family: Family

    /// Parses `text`; nil when it is not a numeric address with a port (names are refused so
    /// that what is bound is exactly what was written).
    package init?(_ text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
            family = .ipv6
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            family = .ipv4
        }
        guard !portPart.isEmpty, portPart.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            portPart.count <= 5, let port = UInt16(portPart)
        else { return nil }
        self.host = String(hostPart)
        self.port = port
        guard withSocketAddress({ _, _ in true }) == true else { return nil }
    }

    /// True for 127.0.0.0/8 and ::1, where plain HTTP is allowed.
    package var isLoopback: Bool {
        withSocketAddress { pointer, _ -> Bool in
            switch family {
            case .ipv4:
                let addr = pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                return UInt32(bigEndian: addr) >> 24 == 127
            case .ipv6:
                let bytes = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                    withUnsafeBytes(of: p.pointee.sin6_addr) { Array($0) }
                }
                return bytes == [UInt8](repeating: 0, count: 15) + [1]
            }
        } ?? false
    }

    /// The host as it goes into a URL (IPv6 in brackets).
    package var urlHost: String { family == .ipv6 ? "[\(host)]" : host }

    /// Calls `body` with a filled sockaddr_in/sockaddr_in6 (inet_pton); nil when the
    /// address text is not valid for its family.
    package func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        switch family {
        case .ipv4:
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &sa.sin_addr) == 1 else { return nil }
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6:
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &sa.sin6_addr) == 1 else { return nil }
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }
}

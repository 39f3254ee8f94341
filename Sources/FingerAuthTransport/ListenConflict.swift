import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// Why an address cannot be listened on, in words an admin acts on: "another fingerauthd
/// (pid 812) is listening there" rather than libmicrohttpd's "Failed to bind to port 0:
/// Address already in use". `probe` binds the address the way libmicrohttpd does
/// (SO_REUSEADDR; IPv6 only for an IPv6 address) before the daemon starts, so that its own
/// message never comes; the holder is read from /proc/net/tcp{,6} (the listening socket's
/// port, uid and inode) and, where this process may look, the process holding that inode.
package enum ListenConflict {
    /// nil when `listen` can be bound now (the socket is closed again at once); else what
    /// stands in the way.
    package static func probe(_ listen: ListenAddress) -> String? {
        let family = listen.family == .ipv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, size)
        if listen.family == .ipv6 { _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, size) }
        let failure: Int32? =
            listen.withSocketAddress { address, length in
                bind(fd, address, length) == 0 ? nil : errno
            } ?? nil
        guard let failure else { return nil }
        return explain(failure, listen)
    }

    /// The sentence for bind's `error` on `listen`.
    static func explain(_ error: Int32, _ listen: ListenAddress) -> String {
        let place = "\(listen.urlHost):\(listen.port)"
        switch error {
        case EADDRINUSE:
            return "cannot listen on \(place): \(holder(port: listen.port)) is listening there"
        case EACCES:
            return "cannot listen on \(place): port \(listen.port) is below the unprivileged range and this user "
                + "may not bind it (use a port from 1024 up, or run with CAP_NET_BIND_SERVICE)"
        case EADDRNOTAVAIL:
            return "cannot listen on \(place): no interface of this host has the address \(listen.host)"
        default:
            return "cannot listen on \(place): \(String(cString: strerror(error)))"
        }
    }

    /// Who listens on `port`: "another fingerauthd (pid 812)", "nginx (pid 77, user www-data)",
    /// "a program of user postgres", or "another program" when /proc says nothing more.
    static func holder(port: UInt16) -> String {
        guard let socket = listeningSocket(port: port) else { return "another program (address already in use)" }
        let user = SystemUserDatabase().name(of: socket.uid) ?? "uid \(socket.uid)"
        guard let found = process(holdingInode: socket.inode) else {
            return "a program of user \(user) (address already in use)"
        }
        if found.name == "fingerauthd" { return "another fingerauthd (pid \(found.pid), user \(user))" }
        return "\(found.name) (pid \(found.pid), user \(user))"
    }

    /// The uid and inode of a listening TCP socket on `port`, from /proc/net/tcp and tcp6.
    static func listeningSocket(port: UInt16) -> (uid: UInt32, inode: String)? {
        let wanted = String(port, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 4 - wanted.count)) + wanted
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard
                let bytes = try? SafeFile.read(
                    table, rule: FileRule(owner: nil, forbiddenBits: 0, maxBytes: 16 * 1024 * 1024))
            else { continue }
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
                guard fields.count >= 10, fields[3] == "0A", fields[1].hasSuffix(":" + padded),
                    let uid = UInt32(fields[7])
                else { continue }
                return (uid, String(fields[9]))
            }
        }
        return nil
    }

    /// The first process with a descriptor on `socket:[inode]` that this process may look
    /// at (its own user's, or any as root), and its command name.
    static func process(holdingInode inode: String) -> (pid: Int32, name: String)? {
        let target = "socket:[\(inode)]"
        let own = getpid()
        for name in SafeFile.list("/proc") {
            guard let pid = Int32(name), pid != own else { continue }
            for fd in SafeFile.list("/proc/\(name)/fd") where linkTarget("/proc/\(name)/fd/\(fd)") == target {
                let comm =
                    (try? SafeFile.read(
                        "/proc/\(name)/comm", rule: FileRule(owner: nil, forbiddenBits: 0, maxBytes: 64)))
                    .map { String(decoding: $0, as: UTF8.self).filter { $0 != "\n" } } ?? "a program"
                return (pid, comm)
            }
        }
        return nil
    }

    private static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBufferPointer { room -> Int in
            guard let base = room.baseAddress else { return -1 }
            return readlink(path, base, room.count - 1)
        }
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

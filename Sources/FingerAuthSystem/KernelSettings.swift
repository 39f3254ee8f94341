import CSystem

/// Kernel settings that decide what the configuration may allow.
package enum KernelSettings {
    /// `net.ipv4.ip_unprivileged_port_start`: ports below it only root (or
    /// CAP_NET_BIND_SERVICE) can listen on. 1024 when the file cannot be read (the kernel's
    /// default); a value outside 0…65536 is read as 0, so that nothing counts as privileged.
    package static func unprivilegedPortStart(path: String = "/proc/sys/net/ipv4/ip_unprivileged_port_start") -> Int {
        guard let bytes = try? SafeFile.read(path, rule: FileRule(owner: 0, forbiddenBits: 0o022, maxBytes: 64)) else {
            return 1024
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingNewline()
        guard let value = Int(text), value >= 0, value <= 65536 else { return 0 }
        return value
    }
}

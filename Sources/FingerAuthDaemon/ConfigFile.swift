import FingerAuthSystem
#if canImport(Glibc)
import Glibc
#endif

/// `/etc/fingerauthd.conf` (or `--config PATH`): `key = value` lines, `#` comments. Every
/// key is the name of a `serve` flag without its dashes (`listen`, `db`, `tls-cert`, …);
/// a flag on the command line wins over the file. Unknown or repeated keys are errors.
/// The file must not be writable by group or others and must belong to root or to the
/// user running fingerauthd.
enum ConfigFile {
    static let defaultPath = "/etc/fingerauthd.conf"

    /// Every key the file may hold.
    static let keys: Set<String> = [
        "listen", "db", "audience", "tls-cert", "tls-key", "max-ttl", "skew", "approval",
        "access-token-ttl", "user-failures", "address-failures", "failure-window",
        "threads", "connection-timeout", "head-timeout", "request-timeout", "max-connections",
        "max-connections-per-address", "connection-rate", "connection-burst", "shutdown-grace", "prune-interval", "audit-retention-days",
        "db-statement-timeout-ms", "trusted-proxies", "unverified-audit-retention-days", "metrics-token-file",
        "tpm-ek-ca", "require-hardware-keys", "admin-listen", "max-keys-per-user-host", "host-registrations",
    ]

    /// The settings of `--config PATH`, else of /etc/fingerauthd.conf when it exists, else none.
    static func load(_ explicit: String?, command: String) throws(UsageError) -> [String: String] {
        let path = explicit ?? defaultPath
        if explicit == nil && !SafeFile.exists(path) { return [:] }
        let bytes: [UInt8]
        do {
            do {
                bytes = try SafeFile.read(path, rule: FileRule(owner: 0, forbiddenBits: 0o022, maxBytes: 64 * 1024))
            } catch .wrongOwner(_, _) where geteuid() != 0 {
                bytes = try SafeFile.read(path, rule: FileRule(owner: UInt32(geteuid()), forbiddenBits: 0o022, maxBytes: 64 * 1024))
            }
        } catch {
            throw UsageError(message: "\(command): configuration \(error)")
        }
        return try parse(String(decoding: bytes, as: UTF8.self), path: path)
    }

    /// The `key = value` pairs of `text`.
    static func parse(_ text: String, path: String) throws(UsageError) -> [String: String] {
        var values: [String: String] = [:]
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            let place = "\(path):\(number + 1)"
            guard let eq = line.firstIndex(of: "=") else {
                throw UsageError(message: "\(place): expected 'key = value'")
            }
            let key = String(line[..<eq].trimmingSpaces)
            let value = String(line[line.index(after: eq)...].trimmingSpaces)
            guard keys.contains(key) else {
                throw UsageError(message: "\(place): unknown key '\(key)'; known keys: \(keys.sorted().joined(separator: ", "))")
            }
            guard values[key] == nil else { throw UsageError(message: "\(place): '\(key)' given twice") }
            guard !value.isEmpty else { throw UsageError(message: "\(place): '\(key)' needs a value") }
            values[key] = value
        }
        return values
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" || c == "\r" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s = s.dropLast() }
        return s
    }
}

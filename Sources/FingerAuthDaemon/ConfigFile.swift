import FingerAuthCore
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
        "max-connections-per-address", "connection-rate", "connection-burst", "shutdown-grace", "prune-interval",
        "audit-retention-days",
        "db-statement-timeout-ms", "trusted-proxies", "unverified-audit-retention-days", "metrics-token-file",
        "tpm-ek-ca", "require-hardware-keys", "admin-listen", "max-keys-per-user-host", "host-registrations",
        "session-tickets", "grant-key", "grant-key-previous",
        "approval-mute", "approval-wait", "approval-host-requests", "approval-address-requests",
    ]

    /// The settings of `--config PATH`, else of /etc/fingerauthd.conf when it exists, else none.
    static func load(_ explicit: String?, command: String) throws(UsageError) -> [String: String] {
        let path = explicit ?? defaultPath
        let text: String?
        do {
            text = try ConfigurationFile.read(path, owner: .rootOrRunningUser)
        } catch {
            throw UsageError(message: "\(command): configuration \(error)")
        }
        guard let text else {
            if explicit == nil { return [:] }
            throw UsageError(message: "\(command): configuration \(path): does not exist")
        }
        return try parse(text, path: path)
    }

    /// The `key = value` pairs of `text` (`ConfigLines`), each a known key, once, with a value.
    static func parse(_ text: String, path: String) throws(UsageError) -> [String: String] {
        let lines: [ConfigLine]
        do {
            lines = try ConfigLines.parse(text, name: path)
        } catch {
            throw UsageError(message: error.description)
        }
        var values: [String: String] = [:]
        for line in lines {
            let place = line.source
            let key = line.key
            guard keys.contains(key) else {
                throw UsageError(
                    message: "\(place): unknown key '\(key)'; known keys: \(keys.sorted().joined(separator: ", "))")
            }
            guard values[key] == nil else { throw UsageError(message: "\(place): '\(key)' given twice") }
            guard !line.value.isEmpty else { throw UsageError(message: "\(place): '\(key)' needs a value") }
            values[key] = line.value
        }
        return values
    }
}

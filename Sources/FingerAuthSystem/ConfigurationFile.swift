import CSystem
import FingerAuthCore

/// How every FingerAuth program reads its configuration file (the module, the agent and
/// the command line `/etc/security/fingerauth.conf`, fingerauthd `/etc/fingerauthd.conf`):
/// opened without following a link, a regular file, owned as `Owner` says, not writable by
/// group or others, at most 64 KiB (`FileRule.config`). Its lines are `ConfigLines`.
package enum ConfigurationFile {
    /// Who may own a configuration file.
    package enum Owner: Sendable {
        /// Root only: the file decides who logs in and which helper runs as root.
        case root
        /// Root, or the user the program runs as (fingerauthd runs as its own user).
        case rootOrRunningUser
    }

    /// A root-owned file's text (`read(_:owner:)` with `.root`): what `OptionsLoader.load`
    /// takes as its `readFile`.
    package static func read(_ path: String) throws(ConfigError) -> String? {
        try read(path, owner: .root)
    }

    /// The text of the file at `path`, nil when it does not exist (the caller decides
    /// whether that is fine). An unsafe or unreadable file is an error that names the path
    /// and, for an owner or a mode, the fix.
    package static func read(_ path: String, owner: Owner) throws(ConfigError) -> String? {
        do {
            let bytes: [UInt8]
            do {
                bytes = try SafeFile.read(path, rule: .config)
            } catch .wrongOwner(_, _) where owner == .rootOrRunningUser && geteuid() != 0 {
                var mine = FileRule.config
                mine.owner = UInt32(geteuid())
                bytes = try SafeFile.read(path, rule: mine)
            }
            return String(decoding: bytes, as: UTF8.self)
        } catch {
            if case .missing = error { return nil }
            var message = error.description
            if message.hasPrefix(path + ": ") { message.removeFirst(path.count + 2) }
            switch error {
            case .insecureMode, .wrongOwner:
                message += "; fix: chown root:root \(path) && chmod 644 \(path)"
            default: break
            }
            throw ConfigError(source: path, message: message)
        }
    }
}

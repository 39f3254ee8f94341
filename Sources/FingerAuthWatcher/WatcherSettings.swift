import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// The watcher's settings: fingerauth.conf (`--config`, as `fingerauth approve` reads it) and
/// the watcher's own flags, each with a default for a real desktop and short values for tests.
struct WatcherSettings: Sendable {
    var options: Options
    /// The user's session bus socket; `%u` is her uid.
    var sessionBus = "/run/user/%u/bus"
    /// How often logind's sessions are read again.
    var seatSeconds = 2
    /// The longest park of one watch (the server's `approval-wait` caps it too).
    var parkSeconds = 20
    /// The longest pause between retries after an error (they start at 1 s, doubling).
    var retrySeconds = 30
    /// This executable (the notifier is started from it).
    var executable: String

    static let usage = """
        usage: fingerauth-watcher [--config F] [--session-bus TEMPLATE] [--seats-every S] [--park S] [--retry S]
          The workstation's approval watcher (run as root by fingerauth-watcher.service): for every
          user with an active, unlocked session on a local seat and a device key here, it watches
          the authenticator for remote approvals, shows each on the user's desktop with a "Not me"
          action, and approves it by the user's finger on this reader. See fingerauth-watcher(8).
        """

    /// Reads the flags and the configuration; the error text for a wrong one.
    static func load(_ words: [String], executable: String) -> Result<WatcherSettings, WatcherError> {
        var flags: [String: String] = [:]
        var index = 0
        let known: Set<String> = ["config", "session-bus", "seats-every", "park", "retry"]
        while index < words.count {
            let word = words[index]
            guard word.hasPrefix("--"), known.contains(String(word.dropFirst(2))), index + 1 < words.count else {
                return .failure(
                    WatcherError("unknown or incomplete option: \(TerminalText.escaped(String(word.prefix(40))))"))
            }
            guard flags[String(word.dropFirst(2))] == nil else {
                return .failure(WatcherError("\(word) given twice"))
            }
            flags[String(word.dropFirst(2))] = words[index + 1]
            index += 2
        }
        var settings = WatcherSettings(options: Options(), executable: executable)
        if let bus = flags["session-bus"] {
            guard bus.hasPrefix("/"), !bus.contains(","), !bus.contains(";") else {
                return .failure(WatcherError("--session-bus must be a socket path (%u for the uid)"))
            }
            settings.sessionBus = bus
        }
        for (flag, range) in [("seats-every", 1...60), ("park", 0...25), ("retry", 1...3600)] {
            guard let text = flags[flag] else { continue }
            guard let value = Int(text), range.contains(value) else {
                return .failure(
                    WatcherError(
                        "--\(flag) must be a number of seconds from \(range.lowerBound) to \(range.upperBound)"))
            }
            switch flag {
            case "seats-every": settings.seatSeconds = value
            case "park": settings.parkSeconds = value
            default: settings.retrySeconds = value
            }
        }
        let path = flags["config"] ?? Options.defaultConfigPath
        guard path.hasPrefix("/") else { return .failure(WatcherError("--config must be an absolute path")) }
        do {
            settings.options = try OptionsLoader.load(
                arguments: flags["config"] == nil ? [] : ["conf=" + path], requireURL: true,
                unprivilegedPortStart: KernelSettings.unprivilegedPortStart(), readFile: ConfigurationFile.read)
        } catch {
            let text = "\(error)"
            return .failure(WatcherError(text.hasPrefix("configuration") ? text : "configuration: " + text))
        }
        return .success(settings)
    }

    /// The session bus socket of `uid`.
    func sessionBus(uid: UInt32) -> String {
        sessionBus.replacingAll("%u", with: String(uid))
    }
}

/// One line on standard error (the journal, under systemd): `fingerauth-watcher: text`.
/// Never a token: callers pass sentences made of names, codes and reasons.
func log(_ text: String) {
    let line = Array(("fingerauth-watcher: " + text + "\n").utf8)
    line.withUnsafeBytes { _ = fa_write(2, $0.baseAddress, $0.count) }
}

/// A wrong flag or configuration, in words.
struct WatcherError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

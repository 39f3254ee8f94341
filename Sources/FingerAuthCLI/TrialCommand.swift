import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth trial`: FingerAuth on a machine without a fingerprint reader, for a first
/// look. `start` points the configuration at libfprint's virtual reader (a socket under the
/// state directory, root's only), `touch` plays the finger on it, `stop` removes the lines,
/// the prints the virtual reader made and what was made for them. Enroll, register, test
/// and sudo are the real commands: only the reader is played.
enum TrialCommand {
    static let usage = """
        usage: fingerauth trial start | touch [--times N] [--wrong] [--wait S] | stop   [--config F] [--state-dir D]
          Try FingerAuth without a fingerprint reader: libfprint's virtual reader stands in for one.
          start   adds `virtual_reader = STATE_DIR/trial/reader.sock`, `reader = libfprint` and
                  `lid = ignore` (between two marker comments) to the configuration and prints the
                  next commands.
          touch   puts the trial's finger on the virtual reader once the reader is open (waiting up to
                  --wait seconds, default 30): N times (default 1; enrolling takes 5), or with --wrong a
                  finger that was never enrolled.
          stop    removes the marked lines, the virtual reader's socket and every print the virtual
                  reader made; a user left with no print is reset (key revoked at the authenticator,
                  key and registration deleted, as fingerauth reset does).
          The real commands do the rest: fingerauth enroll, test, pam-auth-update, sudo. Needs root.
          Exit status: 0 done, 1 failed (the message says what to do), 2 wrong usage.
        """
    /// The identity the trial's finger has on the virtual reader, and the one never enrolled.
    static let finger = "fingerauth-trial-finger"
    static let wrongFinger = "fingerauth-trial-wrong-finger"

    static func run(_ words: [String]) throws -> Int32 {
        guard let action = words.first else { throw UsageError(message: "trial needs start, touch or stop") }
        let rest = Array(words.dropFirst())
        switch action {
        case "start":
            return try start(try CommandArguments(rest, valued: ["config", "state-dir", "user"]))
        case "touch":
            return try touch(
                try CommandArguments(rest, valued: ["config", "state-dir", "times", "wait"], switches: ["wrong"]))
        case "stop":
            return try stop(try CommandArguments(rest, valued: ["config", "state-dir"]))
        default:
            throw UsageError(message: "unknown trial action '\(action)': start, touch or stop")
        }
    }

    static func socketPath(_ options: Options) -> String { options.stateDirectory + "/trial/reader.sock" }

    private static func start(_ args: CommandArguments) throws -> Int32 {
        try Context.requireRoot("trial start")
        let configPath = args["config"] ?? Options.defaultConfigPath
        let options = try Context.loadOptions(args, requireURL: false)
        let text = try TrialConfig.read(configPath)
        let socket = socketPath(options)
        if TrialConfig.isRunning(text) {
            say("a trial is running already: virtual_reader = \(options.virtualReader ?? socket) in \(configPath)")
        } else {
            if let configured = options.virtualReader {
                throw CommandError(
                    "\(configPath) sets virtual_reader = \(configured) already, outside a trial; remove that line first"
                )
            }
            guard socket.utf8.count < 108 else {
                throw CommandError("\(socket) is too long for a socket path (state_dir)")
            }
            do {
                if !SafeFile.exists(options.stateDirectory) {
                    try SafeFile.makeDirectory(options.stateDirectory, mode: 0o700)
                }
                try SafeFile.makeDirectory(options.stateDirectory + "/trial", mode: 0o700)
            } catch {
                throw CommandError("cannot create the trial's directory: \(error)")
            }
            try TrialConfig.write(configPath, TrialConfig.adding(socket: socket, to: text))
            say("trial started: libfprint's virtual reader stands in for a fingerprint reader")
            say("  (virtual_reader = \(socket) in \(configPath); only root can touch it)")
        }
        let user = args["user"] ?? "USER"
        let config = args["config"].map { " --config \($0)" } ?? ""
        say("next, as root" + (args["user"] == nil ? " (USER: an account that may use sudo):" : ":"))
        say("  fingerauth trial touch --times 5\(config) & fingerauth enroll --user \(user)\(config)")
        say("  fingerauth trial touch\(config) & fingerauth test --user \(user)\(config)")
        say("  pam-auth-update --enable fingerauth")
        say("then \(user) runs `sudo -k true`, and while it says \"Place your finger on the fingerprint reader\":")
        say("  fingerauth trial touch\(config)")
        say("at the end: fingerauth trial stop\(config)   (and pam-auth-update --disable fingerauth)")
        return 0
    }

    private static func touch(_ args: CommandArguments) throws -> Int32 {
        try Context.requireRoot("trial touch")
        let times = try number(args["times"], name: "--times", default: 1, range: 1...20)
        let wait = try number(args["wait"], name: "--wait", default: 30, range: 1...600)
        let options = try Context.loadOptions(args, requireURL: false)
        guard let socket = options.virtualReader else {
            throw CommandError("no virtual reader is configured: start a trial first (fingerauth trial start)")
        }
        let identity = args.has("wrong") ? wrongFinger : finger
        let deadline = MonotonicInstant.now().adding(milliseconds: Int64(wait) * 1000)
        for touch in 1...times {
            while true {
                switch UnixSocketCommand.send(Array("SCAN \(identity)".utf8), to: socket, until: deadline) {
                case .success:
                    break
                case .failure(.notListening):
                    guard deadline.remaining > 0 else {
                        throw CommandError(
                            "the virtual reader was not opened within \(wait) s: touch it while a command waits for a finger"
                        )
                    }
                    usleep(20_000)
                    continue
                case let .failure(.failed(why)):
                    throw CommandError("cannot touch the virtual reader: \(why)")
                }
                break
            }
            say(
                "the trial's \(args.has("wrong") ? "wrong " : "")finger touched the virtual reader"
                    + (times > 1 ? " (\(touch)/\(times))" : ""))
        }
        return 0
    }

    private static func stop(_ args: CommandArguments) throws -> Int32 {
        try Context.requireRoot("trial stop")
        let configPath = args["config"] ?? Options.defaultConfigPath
        let options = try Context.loadOptions(args, requireURL: false)
        let text = try TrialConfig.read(configPath)
        if let without = TrialConfig.removing(from: text) {
            try TrialConfig.write(configPath, without)
            say("removed the trial's virtual_reader line from \(configPath)")
        } else {
            say("no trial lines in \(configPath)")
        }
        let directory = options.stateDirectory + "/trial"
        for name in SafeFile.list(directory) { try? SafeFile.remove(directory + "/" + name) }
        if SafeFile.exists(directory) && rmdir(directory) != 0 {
            printError("fingerauth: warning: cannot remove \(directory): \(String(cString: strerror(errno)))")
        }
        var status: Int32 = 0
        for user in SafeFile.list(options.stateDirectory + "/users") {
            let paths = StatePaths(root: options.stateDirectory, user: user)
            let prints = SafeFile.list(paths.printsDirectory).filter { $0.hasSuffix(StatePaths.printSuffix) }
            let virtual = prints.filter { name in
                guard let data = try? SafeFile.read(paths.printsDirectory + "/" + name, rule: .secret) else {
                    return false
                }
                // Only a print that names the virtual driver is handed to libfprint (which aborts
                // on some corrupt prints): a real reader's print is never read here.
                return contains(data, Array(FingerprintReader.virtualDriver.utf8))
                    && FingerprintReader.driver(ofPrint: data, finger: name) == FingerprintReader.virtualDriver
            }
            guard !virtual.isEmpty else { continue }
            if virtual.count == prints.count {
                say("\(user): every print came from the virtual reader; resetting \(user)")
                var words = ["--user", user]
                if let config = args["config"] { words += ["--config", config] }
                if let stateDirectory = args["state-dir"] { words += ["--state-dir", stateDirectory] }
                do {
                    if try ResetCommand.run(words) != 0 { status = 1 }
                } catch let error as CommandError {
                    printError("fingerauth: \(user): \(error.message)")
                    status = 1
                } catch {
                    printError("fingerauth: \(user): \(error)")
                    status = 1
                }
            } else {
                for name in virtual { try? SafeFile.remove(paths.printsDirectory + "/" + name) }
                say(
                    "\(user): deleted \(virtual.count) print(s) of the virtual reader; the other prints and the key stay"
                )
            }
        }
        say("trial stopped" + (status == 0 ? "" : " (with the errors above)"))
        return status
    }

    private static func contains(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
        guard !part.isEmpty, bytes.count >= part.count else { return false }
        return (0...(bytes.count - part.count)).contains { bytes[$0..<($0 + part.count)].elementsEqual(part) }
    }

    private static func number(_ text: String?, name: String, default fallback: Int, range: ClosedRange<Int>)
        throws(UsageError) -> Int
    {
        guard let text else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(message: "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

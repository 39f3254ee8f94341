import FingerAuthCore
import FingerAuthReader
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The helper's reader-only jobs, for diagnosis, tests and recovery: verify a finger and
/// say whether it matched (no token, no authenticator: the module never accepts a bare
/// `MATCH`), or, with `--enroll`, enroll one and store it (the `fingerauth enroll` command
/// calls the same library function). The module's login is `LoginCommand`.
enum ScanCommand {
    /// Exit codes: the module maps them together with the last line it read.
    enum ExitCode: Int32 {
        case matched = 0
        case noMatch = 1
        case usage = 2
        case failed = 3
    }

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ScanArguments
        switch ScanArguments.parse(arguments) {
        case let .success(value): parsed = value
        case let .failure(error):
            LineOutput.emit(.fail(.usage, detail: error.message))
            return .usage
        }
        do {
            if let finger = parsed.enrollFinger {
                return try enroll(finger, parsed)
            }
            return try verify(parsed)
        } catch {
            LineOutput.emit(error.scanMessage)
            return .failed
        }
    }

    /// READY, then NOMATCH lines until a match (MATCH, exit 0) or `maxTries` misses (exit 1).
    static func verify(_ arguments: ScanArguments) throws(ReaderError) -> ExitCode {
        let deadline = Deadline.after(seconds: Double(arguments.timeoutSeconds))
        let store = PrintStore(stateDirectory: arguments.stateDirectory, user: arguments.user)
        let prints = try store.load()
        let reader = try FingerprintReader.open(virtualReader: arguments.virtualReader, deadline: deadline)
        LineOutput.emit(.ready(reader: reader.name))
        var left = arguments.maxTries
        while left > 0 {
            switch try reader.verify(prints: prints, deadline: deadline, events: LineOutput.emit) {
            case let .match(finger):
                reader.close()
                LineOutput.emit(.match(finger: finger))
                return .matched
            case .noMatch:
                left -= 1
                LineOutput.emit(.noMatch(triesLeft: left))
            }
        }
        return .noMatch
    }

    /// READY, STAGE n/m and RETRY lines, then `ENROLLED <finger>`; root only.
    static func enroll(_ finger: Finger, _ arguments: ScanArguments) throws(ReaderError) -> ExitCode {
        guard geteuid() == 0 else {
            LineOutput.emit(.fail(.usage, detail: "--enroll needs root"))
            return .usage
        }
        let deadline = Deadline.after(seconds: Double(arguments.timeoutSeconds))
        let store = PrintStore(stateDirectory: arguments.stateDirectory, user: arguments.user)
        let reader = try FingerprintReader.open(virtualReader: arguments.virtualReader, deadline: deadline)
        LineOutput.emit(.ready(reader: reader.name))
        let data = try reader.enroll(finger: finger, username: arguments.user, deadline: deadline) { progress in
            LineOutput.emit(progress.line)
        }
        _ = try store.save(data, for: finger)
        LineOutput.emit("ENROLLED " + finger.rawValue)
        return .matched
    }
}

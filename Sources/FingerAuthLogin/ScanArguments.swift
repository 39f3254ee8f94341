import FingerAuthCore
import FingerAuthReader

/// The helper's command line, validated. Every problem is a sentence for `FAIL usage`.
///
///     fingerauth-login --user USER --state-dir DIR [--max-tries N] [--timeout SECONDS]
///                     [--virtual-reader SOCKET] [--enroll FINGER]
struct ScanArguments: Equatable {
    var user = ""
    var stateDirectory = ""
    var maxTries = 3
    var timeoutSeconds = 10
    var virtualReader: String? = nil
    /// Set with `--enroll`: enroll this finger instead of verifying.
    var enrollFinger: Finger? = nil

    static let maxTriesRange = 1...10
    static let timeoutRange = 1...120
    /// Default `--timeout` when enrolling: a person needs several touches.
    static let enrollTimeout = 60

    static let usage = "usage: fingerauth-login --user USER --state-dir DIR [--max-tries 1-10] "
        + "[--timeout 1-120] [--virtual-reader SOCKET] [--enroll FINGER]"

    /// Longest Unix socket path (`sun_path` holds 108 bytes with the terminating NUL).
    static let maxSocketPathBytes = 107
    /// Longest state directory path accepted.
    static let maxPathBytes = 1024

    static func parse(_ arguments: [String]) -> Result<ScanArguments, UsageError> {
        var parsed = ScanArguments()
        var seen: Set<String> = []
        var timeoutGiven = false
        var index = 0
        while index < arguments.count {
            let option = arguments[index]
            guard ["--user", "--state-dir", "--max-tries", "--timeout", "--virtual-reader", "--enroll"]
                .contains(option) else {
                return .failure(UsageError("unknown argument \(printable(option)); \(usage)"))
            }
            guard seen.insert(option).inserted else {
                return .failure(UsageError("\(option) given twice"))
            }
            guard index + 1 < arguments.count else {
                return .failure(UsageError("\(option) needs a value"))
            }
            let value = arguments[index + 1]
            index += 2
            switch option {
            case "--user":
                guard UserName.isValid(value) else {
                    return .failure(UsageError("--user must be a user name FingerAuth accepts (\(UserName.rule))"))
                }
                parsed.user = value
            case "--state-dir":
                guard isAbsolutePath(value, limit: maxPathBytes) else {
                    return .failure(UsageError("--state-dir must be an absolute path"))
                }
                parsed.stateDirectory = value
            case "--max-tries":
                guard let n = Int(value), maxTriesRange.contains(n) else {
                    return .failure(UsageError("--max-tries must be a number from 1 to 10"))
                }
                parsed.maxTries = n
            case "--timeout":
                guard let n = Int(value), timeoutRange.contains(n) else {
                    return .failure(UsageError("--timeout must be a number of seconds from 1 to 120"))
                }
                parsed.timeoutSeconds = n
                timeoutGiven = true
            case "--virtual-reader":
                guard isAbsolutePath(value, limit: maxSocketPathBytes) else {
                    return .failure(UsageError("--virtual-reader must be an absolute socket path of at most 107 bytes"))
                }
                parsed.virtualReader = value
            default: // "--enroll"
                guard let finger = Finger(rawValue: value) else {
                    return .failure(UsageError("--enroll needs a finger name such as right-index-finger"))
                }
                parsed.enrollFinger = finger
            }
        }
        guard !parsed.user.isEmpty else { return .failure(UsageError("--user is required; \(usage)")) }
        guard !parsed.stateDirectory.isEmpty else {
            return .failure(UsageError("--state-dir is required; \(usage)"))
        }
        if parsed.enrollFinger != nil && !timeoutGiven { parsed.timeoutSeconds = enrollTimeout }
        return .success(parsed)
    }

    /// An absolute path of printable ASCII, at most `limit` bytes, without `..` components.
    static func isAbsolutePath(_ path: String, limit: Int) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.count >= 2, bytes.count <= limit, bytes[0] == UInt8(ascii: "/"),
              bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return false }
        return !path.split(separator: "/").contains("..")
    }

    private static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(40))
    }
}

/// A command line the helper refuses (`FAIL usage <message>`, exit 2).
struct UsageError: Error, Equatable {
    let message: String
    init(_ message: String) { self.message = message }
}

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

    static let usage =
        "usage: fingerauth-login --user USER --state-dir DIR [--max-tries 1-10] "
        + "[--timeout 1-120] [--virtual-reader SOCKET] [--enroll FINGER]"

    /// Longest Unix socket path (`sun_path` holds 108 bytes with the terminating NUL).
    static let maxSocketPathBytes = 107
    /// Longest state directory path accepted.
    static let maxPathBytes = 1024

    static func parse(_ arguments: [String]) -> Result<ScanArguments, UsageError> {
        let given: CommandArguments
        do {
            given = try CommandArguments(
                arguments, valued: ["user", "state-dir", "max-tries", "timeout", "virtual-reader", "enroll"])
        } catch {
            return .failure(
                error.cause == .unknownOption || error.cause == .unexpectedArgument ? error.adding(usage) : error)
        }
        var parsed = ScanArguments()
        guard let user = given["user"] else { return .failure(UsageError(message: "--user is required; \(usage)")) }
        guard UserName.isValid(user) else {
            return .failure(UsageError(message: "--user must be a user name FingerAuth accepts (\(UserName.rule))"))
        }
        parsed.user = user
        guard let stateDirectory = given["state-dir"] else {
            return .failure(UsageError(message: "--state-dir is required; \(usage)"))
        }
        guard isAbsolutePath(stateDirectory, limit: maxPathBytes) else {
            return .failure(UsageError(message: "--state-dir must be an absolute path"))
        }
        parsed.stateDirectory = stateDirectory
        if let value = given["max-tries"] {
            guard let n = Int(value), maxTriesRange.contains(n) else {
                return .failure(UsageError(message: "--max-tries must be a number from 1 to 10"))
            }
            parsed.maxTries = n
        }
        if let value = given["timeout"] {
            guard let n = Int(value), timeoutRange.contains(n) else {
                return .failure(UsageError(message: "--timeout must be a number of seconds from 1 to 120"))
            }
            parsed.timeoutSeconds = n
        }
        if let value = given["virtual-reader"] {
            guard isAbsolutePath(value, limit: maxSocketPathBytes) else {
                return .failure(
                    UsageError(message: "--virtual-reader must be an absolute socket path of at most 107 bytes"))
            }
            parsed.virtualReader = value
        }
        if let value = given["enroll"] {
            guard let finger = Finger(rawValue: value) else {
                return .failure(UsageError(message: "--enroll needs a finger name such as right-index-finger"))
            }
            parsed.enrollFinger = finger
            if given["timeout"] == nil { parsed.timeoutSeconds = enrollTimeout }
        }
        return .success(parsed)
    }

    /// An absolute path of printable ASCII, at most `limit` bytes, without `..` components.
    static func isAbsolutePath(_ path: String, limit: Int) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.count >= 2, bytes.count <= limit, bytes[0] == UInt8(ascii: "/"),
            bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else { return false }
        return !path.split(separator: "/").contains("..")
    }
}

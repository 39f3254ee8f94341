import FingerAuthCore
import FingerAuthLoginDomain

#if canImport(Glibc)
import Glibc
#endif

/// The helper's standard output: one line per `write(2)`, no buffering, so the module reading
/// the pipe sees each message the moment it is decided.
enum LineOutput {
    /// Writes `line` and a newline to fd 1. A closed pipe (the module gave up) is ignored:
    /// SIGPIPE is ignored at start and the next wait ends at its deadline anyway.
    static func emit(_ line: String) {
        var bytes = Array(line.utf8.prefix(HelperMessage.maxLineBytes))
        bytes.append(UInt8(ascii: "\n"))
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                write(STDOUT_FILENO, raw.baseAddress.map { $0 + written }, raw.count - written)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            written += n
        }
    }

    static func emit(_ message: HelperMessage) { emit(message.line) }
}

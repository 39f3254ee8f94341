import FingerAuthDomain

#if canImport(Glibc)
import Glibc
#endif

/// Where a listener's lines go: one per request (`RequestSummary.line`), and the service's
/// free-form messages.
package protocol RequestLines: ServiceLog {
    /// Writes the line of one request.
    func record(_ summary: RequestSummary)
}

/// The service's lines on standard error (`RequestLines`), each written with a single
/// write(2) so that lines from worker threads never interleave.
package final class RequestLog: RequestLines {
    private let fd: Int32

    /// A log on file descriptor `fd` (standard error by default); the fd is not owned.
    package init(fd: Int32 = 2) { self.fd = fd }

    /// Writes the line for `summary`.
    package func record(_ summary: RequestSummary) {
        write(summary.lineBytes)
    }

    /// Writes a free-form line (start, stop, errors). Callers never pass secrets.
    package func message(_ text: String) {
        write(Array(("fingerauthd: " + LogText.printable(text) + "\n").utf8))
    }

    private func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.write(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}

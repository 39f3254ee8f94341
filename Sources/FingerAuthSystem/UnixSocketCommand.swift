import CSystem

/// One command to a Unix stream socket whose listener reads it and closes the connection
/// (libfprint's virtual reader, `fingerauth trial touch`): connect, write the bytes as they
/// are (no newline added), wait for the listener's end of file, all before `deadline`.
package enum UnixSocketCommand {
    package enum Failure: Error, Equatable, Sendable {
        /// Nobody listens there (yet): no socket, or a socket nobody accepts on.
        case notListening
        /// Anything else, with the reason.
        case failed(String)
    }

    package static func send(_ bytes: [UInt8], to path: String, until deadline: MonotonicInstant) -> Result<
        Void, Failure
    > {
        let fd = fa_unix_connect(path)
        guard fd >= 0 else {
            let code = fa_errno()
            if code == ENOENT || code == ECONNREFUSED { return .failure(.notListening) }
            return .failure(.failed("\(path): \(String(cString: strerror(code)))"))
        }
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { fa_send(fd, $0.baseAddress.map { $0 + sent }, bytes.count - sent) }
            if n > 0 {
                sent += n
                continue
            }
            if n < 0 && fa_errno() == EINTR { continue }
            guard n < 0 && (fa_errno() == EAGAIN || fa_errno() == EWOULDBLOCK), wait(fd, for: POLLOUT, until: deadline)
            else {
                return .failure(.failed("\(path): the command could not be sent"))
            }
        }
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let n = buffer.withUnsafeMutableBytes { fa_read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return .success(()) }
            if n > 0 { continue }
            if fa_errno() == EINTR { continue }
            guard fa_errno() == EAGAIN || fa_errno() == EWOULDBLOCK, wait(fd, for: POLLIN, until: deadline) else {
                return .failure(.failed("\(path): the listener did not take the command in time"))
            }
        }
    }

    private static func wait(_ fd: Int32, for events: Int32, until deadline: MonotonicInstant) -> Bool {
        while true {
            var pfd = pollfd(fd: fd, events: Int16(events), revents: 0)
            let ready = poll(&pfd, 1, deadline.remaining)
            if ready < 0 && fa_errno() == EINTR { continue }
            return ready > 0
        }
    }
}

import CSystem

/// `\n`-terminated lines from a non-blocking descriptor, every wait under a deadline
/// (`poll`), each line and the whole stream bounded: the one line reader behind the
/// helper's pipe (`ChildProcess`) and the agent's socket (`SocketLines`). It owns the
/// buffer, not the descriptor: what to do when the stream ends is the owner's.
package struct BoundedLineReader {
    /// One step of reading.
    package enum Read: Equatable {
        case line(String)
        case timedOut
        /// A line over `maxLineBytes`, or more than `maxTotalBytes` in all.
        case garbage
        /// The stream ended with bytes after the last newline.
        case endedMidLine
        /// The stream ended (end of file, or no descriptor) with nothing left over.
        case ended
        /// `poll` failed (not EINTR).
        case pollFailed
        /// `read` failed (not EINTR or EAGAIN).
        case readFailed
    }

    let maxLineBytes: Int
    let maxTotalBytes: Int
    let chunkBytes: Int
    private var buffer: [UInt8] = []
    private var totalRead = 0

    package init(maxLineBytes: Int, maxTotalBytes: Int, chunkBytes: Int) {
        self.maxLineBytes = maxLineBytes
        self.maxTotalBytes = maxTotalBytes
        self.chunkBytes = max(1, chunkBytes)
    }

    /// The next line from `fd` (negative: already closed) without its newline, waiting at
    /// most until `deadline`.
    package mutating func next(from fd: Int32, until deadline: MonotonicInstant) -> Read {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                guard line.count <= maxLineBytes else { return .garbage }
                return .line(String(decoding: line, as: UTF8.self))
            }
            guard buffer.count <= maxLineBytes else { return .garbage }
            guard fd >= 0 else { return .ended }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = fa_poll(&pfd, 1, deadline.remaining)
            if ready < 0 {
                if fa_errno() == EINTR { continue }
                return .pollFailed
            }
            if ready == 0 { return .timedOut }
            var chunk = [UInt8](repeating: 0, count: chunkBytes)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if fa_errno() == EINTR || fa_errno() == EAGAIN { continue }
                return .readFailed
            }
            if n == 0 { return buffer.isEmpty ? .ended : .endedMidLine }
            totalRead += n
            guard totalRead <= maxTotalBytes else { return .garbage }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }
}

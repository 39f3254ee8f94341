import CSystem

/// Writes `text` and a newline to standard error with write(2): unbuffered, whole (a short
/// write goes on, EINTR is retried), and without C's `stderr`, a global variable that
/// Swift 6 code may not read. A closed or full standard error loses the line, nothing else.
package func printError(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    var written = 0
    while written < bytes.count {
        let n = bytes[written...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        if n < 0 && fa_errno() == EINTR { continue }
        guard n > 0 else { return }
        written += n
    }
}

import FingerAuthCore
import FingerAuthReader

#if canImport(Glibc)
import Glibc
#endif

/// Reads a print with libfprint in a forked child first: `fp_print_deserialize` aborts the
/// whole process (g_error, SIGTRAP) on some truncated prints instead of returning an error.
/// The child takes the abort; the helper answers `FAIL bad-print` with a reason instead
/// of dying. Runs before GLib starts any thread, so the fork is safe.
enum IsolatedPrintCheck {
    static let deadlineMilliseconds = 2000

    static func check(finger: String, data: [UInt8]) throws(ReaderError) {
        let pid = fork()
        if pid == 0 {
            do {
                try FingerprintReader.checkPrint(finger: finger, data: data)
                _exit(0)
            } catch {
                _exit(1)
            }
        }
        guard pid > 0 else {
            // No child to spare: check in this process (the module still survives an abort).
            try FingerprintReader.checkPrint(finger: finger, data: data)
            return
        }
        var waited = 0
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR { throw ReaderError(.badPrint, "The print for \(finger) could not be checked") }
            if waited >= deadlineMilliseconds {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw ReaderError(.badPrint, "Reading the print for \(finger) took too long")
            }
            usleep(1000)
            waited += 1
        }
        if status & 0x7f != 0 {
            throw ReaderError(.badPrint, "The print for \(finger) is corrupt (libfprint aborted reading it)")
        }
        // The child returned an error: read it again here for the message (no abort possible).
        try FingerprintReader.checkPrint(finger: finger, data: data)
    }
}

import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `prompt = parallel`: after the authenticator accepted, one newline into the caller's
/// terminal ends the module's pending "Password or place your finger: " read (the module
/// is blocked in the conversation and has no thread to end it). Root with `CAP_SYS_ADMIN`
/// may use `TIOCSTI` on any terminal, also where `dev.tty.legacy_tiocsti` is 0.
///
/// Once, and only while a password read is pending: the terminal must show echo off and
/// canonical input. The helper waits for that at most `echoOffWaitMilliseconds` (a finger
/// that matched before the conversation turned echo off: `misc_conv` sets it with
/// `TCSAFLUSH`, which would discard an earlier newline). After the read ended the host
/// turns echo back on, so nothing is injected then; and the module kills the helper the
/// moment the conversation returns without a verdict. What remains is the instant
/// between the check and the `ioctl` (docs/ARCHITECTURE.md, "The race").
enum TerminalInjector {
    static let echoOffWaitMilliseconds: Int64 = 500

    /// Why nothing was injected, or nil when the newline went in.
    @discardableResult
    static func inject(_ terminal: TerminalTarget) -> String? {
        let fd = open(terminal.path, O_RDWR | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return "cannot open the terminal" }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, UInt64(info.st_rdev) == terminal.device,
            isatty(fd) == 1
        else {
            return "not the terminal the module named"
        }
        let deadline = MonotonicInstant.now().adding(milliseconds: echoOffWaitMilliseconds)
        while true {
            let flags = fa_tty_lflag(fd)
            guard flags >= 0 else { return "cannot read the terminal's modes" }
            if flags & fa_tty_echo_flag() == 0 && flags & fa_tty_icanon_flag() != 0 { break }
            guard MonotonicInstant.now() < deadline else { return "no password read pending (echo on)" }
            usleep(10_000)
        }
        guard fa_tty_inject_byte(fd, 0x0a) == 0 else { return "TIOCSTI refused" }
        return nil
    }
}

import CPAM
import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// Where `prompt = parallel` may be used: the conversation reads a real terminal that
/// belongs to the caller's session. All of these must hold, else the login stays
/// sequential, silently:
///
/// - `PAM_TTY` names `/dev/pts/N` or `/dev/ttyN` (`pts/N` without `/dev/` too);
/// - standard input is a terminal and the very same device (`sudo -S` with a pipe, sshd,
///   a display manager fail here);
/// - that terminal is the controlling terminal of this process's session
///   (`tcgetsid(0) == getsid(0)`), so the newline the helper injects later can only reach
///   the session that asked.
///
/// Screen lockers never get here: they run as the user and take the agent's path.
enum SessionTerminal {
    static func find(_ handle: PAMHandle) -> TerminalTarget? {
        guard let item = handle.stringItem(PAM_TTY), let path = TerminalTarget.devicePath(fromPAMTTY: item) else {
            return nil
        }
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        var input = stat()
        var named = stat()
        guard fstat(STDIN_FILENO, &input) == 0, stat(path, &named) == 0 else { return nil }
        guard FileType.of(input.st_mode) == FileType.characterDevice,
            FileType.of(named.st_mode) == FileType.characterDevice, input.st_rdev == named.st_rdev
        else { return nil }
        let terminalSession = tcgetsid(STDIN_FILENO)
        guard terminalSession > 0, terminalSession == getsid(0) else { return nil }
        return TerminalTarget(path: path, device: UInt64(input.st_rdev))
    }
}

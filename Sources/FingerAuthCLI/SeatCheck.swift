import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// The `sessions` line of `fingerauth status`: which mode the local-seat rule runs in on
/// this host (`LocalSeat`), what it covers and what it cannot see.
enum SeatCheck {
    static func sessions(_ options: Options, logind: LogindState = LogindState()) -> StatusCheck {
        if logind.isRunning {
            return .pass(
                "sessions",
                "logind mode: the reader is armed only for a login in an active, local session on a seat "
                    + "(on its own virtual console; on its terminals, or in a user unit while the user's graphical session "
                    + "is in front, only while no remote session of that user is live); cron, at and services are not local. "
                    + "Cannot see: keystrokes sent into the seat's display by other means (a VNC server of the local "
                    + "display), a user unit that a remote session scheduled before it ended")
        }
        return .warn(
            "sessions",
            "records mode (no logind on this host): a login is skipped when PAM_RHOST, a session record "
                + "in \(options.sessionDirectory) or utmp says remote, and, off the virtual consoles, while a remote "
                + "session of the same user is live (a multiplexer attached from ssh, a user unit or an X display typed "
                + "into from there). Cannot see: a job of cron or at, or one started outside any session, that a remote "
                + "session left to run after it ended; a session without an audit session id (no pam_loginuid)",
            fix: "where remote logins matter, run systemd-logind (a login must then be in an active seat session) "
                + "and keep the module's session line after pam_loginuid in sshd's stack")
    }
}

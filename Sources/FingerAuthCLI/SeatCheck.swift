import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// The `sessions` line of `fingerauth status`: which mode the local-seat rule runs in on
/// this host (`LocalSeat`), in one line; what each mode covers and cannot see is in
/// pam_fingerauth(8), LOCAL SEAT.
enum SeatCheck {
    static let pointer = "pam_fingerauth(8), LOCAL SEAT"

    static func sessions(_ options: Options, logind: LogindState = LogindState()) -> StatusCheck {
        if logind.isRunning {
            return .pass(
                "sessions",
                "logind mode: the reader is armed only for a login in an active, local seat session (\(pointer))")
        }
        return .warn(
            "sessions",
            "records mode (no logind on this host): remote logins are told by PAM_RHOST, the session records in "
                + "\(options.sessionDirectory) and utmp; it sees less than logind mode (\(pointer))")
    }
}

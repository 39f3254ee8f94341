/// fprintd's D-Bus API (`net.reactivated.Fprint`, fprintd 1.94), as far as FingerAuth uses
/// it: names, and what each status string of its signals means. The calls themselves are
/// made by the login helper (`FprintdClient`, GDBus); the module never talks to the bus.
package enum Fprintd {
    package static let busName = "net.reactivated.Fprint"
    package static let managerPath = "/net/reactivated/Fprint/Manager"
    package static let managerInterface = "net.reactivated.Fprint.Manager"
    package static let deviceInterface = "net.reactivated.Fprint.Device"
    /// Where D-Bus activation finds fprintd: its presence means "fprintd is installed".
    package static let serviceFile = "/usr/share/dbus-1/system-services/net.reactivated.Fprint.service"
    /// The command that enrolls a finger in fprintd, for messages.
    package static func enrollCommand(user: String, finger: String) -> String {
        "fprintd-enroll -f \(finger) \(user)"
    }

    /// One `VerifyStatus` result: fprintd's words (`verify-match`…) in FingerAuth's terms.
    package enum VerifyStatus: Equatable, Sendable {
        case match
        case noMatch
        /// The reader asks for the finger again; the verification goes on.
        case retry(hint: String)
        /// The reader went away during the scan.
        case disconnected
        /// A driver error; fprintd gives no detail.
        case failed
        /// A word this version does not know: a failure, never a match.
        case unknown(String)

        package init(_ result: String) {
            switch result {
            case "verify-match": self = .match
            case "verify-no-match": self = .noMatch
            case "verify-retry-scan": self = .retry(hint: "The finger was not read well, try again")
            case "verify-swipe-too-short": self = .retry(hint: "Swipe was too short, try again")
            case "verify-finger-not-centered": self = .retry(hint: "Center your finger on the reader")
            case "verify-remove-and-retry": self = .retry(hint: "Remove your finger and try again")
            case "verify-disconnected": self = .disconnected
            case "verify-unknown-error": self = .failed
            default: self = .unknown(result)
            }
        }
    }

    /// One `EnrollStatus` result.
    package enum EnrollStatus: Equatable, Sendable {
        case completed
        case stagePassed
        case retry(hint: String)
        /// The sensor already holds this finger (for this or another user, or another system).
        case duplicate
        /// No room left on the sensor.
        case full
        case disconnected
        case failed
        case unknown(String)

        package init(_ result: String) {
            switch result {
            case "enroll-completed": self = .completed
            case "enroll-stage-passed": self = .stagePassed
            case "enroll-retry-scan": self = .retry(hint: "The finger was not read well, try again")
            case "enroll-swipe-too-short": self = .retry(hint: "Swipe was too short, try again")
            case "enroll-finger-not-centered": self = .retry(hint: "Center your finger on the reader")
            case "enroll-remove-and-retry": self = .retry(hint: "Remove your finger and try again")
            case "enroll-duplicate": self = .duplicate
            case "enroll-data-full": self = .full
            case "enroll-disconnected": self = .disconnected
            case "enroll-failed", "enroll-unknown-error": self = .failed
            default: self = .unknown(result)
            }
        }
    }
}

/// A Linux-PAM return code as a value (the numbers of `<security/_pam_types.h>`), so that
/// the login decision can be tested without libpam.
package struct PAMCode: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }

    package static let success = PAMCode(rawValue: 0)
    package static let serviceError = PAMCode(rawValue: 3)
    package static let systemError = PAMCode(rawValue: 4)
    package static let authError = PAMCode(rawValue: 7)
    package static let authInfoUnavailable = PAMCode(rawValue: 9)
    package static let userUnknown = PAMCode(rawValue: 10)
    package static let maxTries = PAMCode(rawValue: 11)
    package static let conversationError = PAMCode(rawValue: 19)
    package static let ignore = PAMCode(rawValue: 25)

    /// The C macro's name, as logs and tests print it.
    package var description: String {
        switch rawValue {
        case 0: return "PAM_SUCCESS"
        case 3: return "PAM_SERVICE_ERR"
        case 4: return "PAM_SYSTEM_ERR"
        case 7: return "PAM_AUTH_ERR"
        case 9: return "PAM_AUTHINFO_UNAVAIL"
        case 10: return "PAM_USER_UNKNOWN"
        case 11: return "PAM_MAXTRIES"
        case 19: return "PAM_CONV_ERR"
        case 25: return "PAM_IGNORE"
        default: return "PAM_CODE_\(rawValue)"
        }
    }
}

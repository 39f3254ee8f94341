import CPAM
import CSystem
import FingerAuthCore
import FingerAuthLoginDomain

/// The libpam handle the module was called with; every libpam call goes through here.
struct PAMHandle {
    let raw: OpaquePointer

    /// pam_get_user: the user name, asking the application for it if needed.
    /// On failure, the PAM code to return.
    func user() -> (name: String?, failure: PAMCode) {
        var name: UnsafePointer<CChar>?
        let rc = pam_get_user(raw, &name, nil)
        if rc == PAM_CONV_ERR || rc == PAM_CONV_AGAIN { return (nil, .conversationError) }
        guard rc == PAM_SUCCESS, let name else { return (nil, .userUnknown) }
        return (boundedString(name, limit: 1024), .success)
    }

    /// pam_get_item for a string item (PAM_SERVICE, PAM_RHOST); nil when unset.
    func stringItem(_ item: Int32) -> String? {
        var value: UnsafePointer<CChar>?
        guard fa_pam_get_string_item(raw, item, &value) == PAM_SUCCESS, let value else { return nil }
        return boundedString(value, limit: 1024)
    }

    /// True when the PAM environment or the process environment says SSH session.
    func inSSHSession() -> Bool {
        for name in ["SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"] {
            if let v = pam_getenv(raw, name), v.pointee != 0 { return true }
            if let v = getenv(name), v.pointee != 0 { return true }
        }
        return false
    }

    /// pam_syslog at LOG_AUTHPRIV with `priority`.
    func syslog(_ priority: Int32, _ message: String) {
        fa_pam_syslog(raw, LOG_AUTHPRIV | priority, message)
    }

    /// A C string of at most `limit` bytes, invalid UTF-8 replaced.
    private func boundedString(_ p: UnsafePointer<CChar>, limit: Int) -> String {
        let length = fa_strnlen(p, limit)
        return p.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

/// The caller's language: the first of LC_ALL, LC_MESSAGES and LANG that is set, when it is
/// a plain locale name and not C or POSIX (`LocaleName`); nil otherwise. The only variables
/// the module reads besides the SSH ones.
package enum CallerLocale {
    package static func fromEnvironment() -> String? {
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            guard let value = getenv(name), value.pointee != 0 else { continue }
            let length = fa_strnlen(value, 65)
            let chosen = value.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            }
            return LocaleName.isTranslatable(chosen) ? chosen : nil
        }
        return nil
    }
}

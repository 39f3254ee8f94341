/// The one PAM-service-name rule of FingerAuth: the module, the login helper, the agent and
/// the authenticator accept the same names, so that a service the helper signs for is one
/// the authenticator takes, and a name is never a second word or a line in a log.
///
/// A service name is 1 to 64 bytes of printable ASCII without spaces (0x21…0x7E): the
/// `service` and `client_service` claims fingerauthd verifies, and what a file name under
/// /etc/pam.d is in practice. PAM itself puts no rule on `PAM_SERVICE` (an application
/// names it), so the module does not refuse a name: it maps it with `claim(_:)`.
package enum ServiceName {
    /// The longest name, in bytes.
    package static let maxLength = 64

    /// The rule in one line, for messages.
    package static let rule = "1 to \(maxLength) printable ASCII characters without spaces"

    /// What `claim(_:)` makes of an empty name.
    package static let unknown = "unknown"

    /// True when `name` follows the rule.
    package static func isValid(_ name: String) -> Bool { isValid(name.utf8) }

    /// True when `name` follows the rule.
    package static func isValid(_ name: Substring) -> Bool { isValid(name.utf8) }

    /// The PAM service as the module puts it in the helper's request and so in the token:
    /// each character outside printable ASCII, and each space, becomes `_`; the result is
    /// cut to `maxLength` bytes; an empty name becomes `unknown`. The result follows the rule.
    package static func claim(_ service: String) -> String {
        var bytes: [UInt8] = []
        for scalar in service.unicodeScalars {
            guard bytes.count < maxLength else { break }
            bytes.append(isAllowed(scalar.value) ? UInt8(truncatingIfNeeded: scalar.value) : UInt8(ascii: "_"))
        }
        return bytes.isEmpty ? unknown : String(decoding: bytes, as: UTF8.self)
    }

    private static func isValid<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        var count = 0
        for b in bytes {
            count += 1
            guard count <= maxLength, isAllowed(UInt32(b)) else { return false }
        }
        return count > 0
    }

    private static func isAllowed(_ value: UInt32) -> Bool { value > 0x20 && value < 0x7f }
}

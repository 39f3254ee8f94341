/// The one user-name rule of FingerAuth: the module, the login helper, the agent, the
/// command line and the authenticator accept the same names, so that a name is never a
/// path, an option or a log injection, and one person is never two names on the server
/// (`Carol` beside `carol`, `carol.` beside `carol`).
///
/// The POSIX portable names Debian's `adduser` takes by default (`NAME_REGEX` and, for a
/// leading `_`, `SYS_NAME_REGEX` in adduser.conf): lower-case ASCII letters, digits, `_`
/// and `-`, starting with a letter or `_`, at most 32 bytes (useradd's limit). Two
/// additions, both for directory-backed fleets (SSSD, LDAP): a `.` inside a name
/// (`john.doe`), never first, last or doubled. Not accepted: upper case, a trailing `$`
/// (Samba machine accounts log in with no finger), anything outside ASCII.
package enum UserName {
    package static let maxLength = 32

    /// The rule in one line, for messages.
    package static let rule =
        "lower-case letters, digits, '_' and '-', a '.' only inside, "
        + "starting with a letter or '_', at most \(maxLength) bytes"

    /// True when `name` follows the rule.
    package static func isValid(_ name: String) -> Bool { problem(name) == nil }

    /// Why `name` breaks the rule, as a short phrase without the name itself (a user may
    /// have typed a password at the user prompt); nil when it follows it.
    package static func problem(_ name: String) -> String? {
        var count = 0
        var previous: UInt8 = 0
        for b in name.utf8 {
            count += 1
            if count > maxLength { return "longer than \(maxLength) bytes" }
            let lower = b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")
            let digit = b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")
            if b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") { return "upper-case letters" }
            guard lower || digit || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") else {
                return "characters other than a-z, 0-9, '_', '-' and '.'"
            }
            if count == 1 && !(lower || b == UInt8(ascii: "_")) { return "must start with a lower-case letter or '_'" }
            if b == UInt8(ascii: ".") && previous == UInt8(ascii: ".") { return "'..' inside" }
            previous = b
        }
        if count == 0 { return "empty" }
        if previous == UInt8(ascii: ".") { return "ends with '.'" }
        return nil
    }
}

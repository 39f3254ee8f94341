/// Which fingerprint service reads the finger (`reader`).
package enum ReaderChoice: String, Equatable, Sendable, CaseIterable {
    /// The login helper opens the reader itself with libfprint; prints are FingerAuth's own
    /// (`fingerauth enroll`). When fprintd runs, the reader is its: the login falls over at
    /// once ("reader in use by fprintd").
    case libfprint
    /// fprintd verifies over the system bus (`net.reactivated.Fprint`) with the prints that
    /// GNOME Settings or `fprintd-enroll` made; FingerAuth keeps only the device key.
    case fprintd
    /// fprintd when its service is installed and holds prints for the user, libfprint
    /// directly otherwise.
    case auto
}

/// What a closed laptop lid means for the fingerprint login (`lid`).
package enum LidPolicy: String, Equatable, Sendable, CaseIterable {
    /// Lid closed and no reader on an external port: skip at once (`PAM_AUTHINFO_UNAVAIL`,
    /// no prompt), so that the password prompt comes without waiting for a finger nobody
    /// can put on a reader under a closed lid.
    case skip
    /// The lid is not looked at.
    case ignore
}

/// Whether the laptop's lid is closed, as logind or the ACPI lid files say.
package enum LidState: Equatable, Sendable {
    case open
    case closed
    /// No lid (a desktop), or nothing readable: treated as open.
    case unknown

    /// Reads one ACPI lid file (`/proc/acpi/button/lid/LID0/state`): `state:      closed`.
    /// Anything else is `.unknown`.
    package static func parseACPI(_ text: String) -> LidState {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
        guard words.count == 2, words[0] == "state:" else { return .unknown }
        switch words[1] {
        case "open": return .open
        case "closed": return .closed
        default: return .unknown
        }
    }

    /// Several lids (rare): closed only when one says closed and none says open.
    package static func combine(_ states: [LidState]) -> LidState {
        if states.contains(.open) { return .open }
        return states.contains(.closed) ? .closed : .unknown
    }
}

/// Where a reader sits, from the `removable` attribute of its USB port in sysfs (the
/// firmware's ACPI `_PLD`): `fixed` inside the laptop, `removable` an external port.
package enum ReaderPlacement: String, Equatable, Sendable {
    case builtIn = "built-in"
    case external

    /// `removable` says `removable`: external. `fixed`, `unknown`, nothing: built-in, since
    /// skipping a reader only brings the password prompt sooner.
    package init(removable: String?) {
        let word = removable.map { String($0.filter { $0 != "\n" && $0 != " " }) }
        self = word == "removable" ? .external : .builtIn
    }

    /// The sysfs name of a USB device (`1-3.2`) from GUsb's platform id (`usb:01:00:03:02`:
    /// the bus in hex, the root hub's port `00`, then each port in hex). Nil when it is not
    /// one.
    package static func sysfsName(platformID: String) -> String? {
        let parts = platformID.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0] == "usb", parts[2] == "00" else { return nil }
        var numbers: [Int] = []
        for part in [parts[1]] + parts[3...] {
            guard part.count == 2, let n = Int(part, radix: 16), n > 0 else { return nil }
            numbers.append(n)
        }
        return "\(numbers[0])-" + numbers.dropFirst().map(String.init).joined(separator: ".")
    }
}

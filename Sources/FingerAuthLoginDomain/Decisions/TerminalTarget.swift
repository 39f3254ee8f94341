import FingerAuthCore

/// The caller's own terminal in `prompt = parallel`: where the login helper, after the
/// authenticator accepted, injects the one newline that ends the pending password read.
/// The module found it (PAM_TTY, the same device as its standard input, the controlling
/// terminal of its session) and sends it in the request; the helper opens the path and
/// checks that it is still the same character device before it injects.
package struct TerminalTarget: Equatable, Sendable {
    /// `/dev/pts/N` or `/dev/ttyN`.
    package var path: String
    /// `st_rdev` of the device, as the module saw it.
    package var device: UInt64

    package init(path: String, device: UInt64) {
        self.path = path
        self.device = device
    }

    /// PAM_TTY as a device path: `pts/3` and `/dev/pts/3` both give `/dev/pts/3`. nil for
    /// anything else (`:0`, `ssh`, a name with `..`, a path outside /dev/pts and /dev/tty*).
    package static func devicePath(fromPAMTTY value: String) -> String? {
        let path = value.hasPrefix("/") ? value : "/dev/" + value
        guard path.utf8.count <= 64, !path.containsBytes("/../"), !path.hasSuffix("/.."), !path.containsBytes("//")
        else {
            return nil
        }
        let rest: Substring
        if path.hasPrefix("/dev/pts/") {
            rest = path.dropFirst("/dev/pts/".count)
        } else if path.hasPrefix("/dev/tty") {
            rest = path.dropFirst("/dev/tty".count)
        } else {
            return nil
        }
        guard !rest.isEmpty, rest.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return path
    }
}

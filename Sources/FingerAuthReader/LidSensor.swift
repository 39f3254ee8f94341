import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// Whether the laptop's lid is closed: logind's `LidClosed` where logind runs (its name on
/// the system bus, held by root), else the ACPI lid files (`<acpi_lid_dir>/*/state`, e.g.
/// `/proc/acpi/button/lid/LID0/state`). A wrong answer can only skip the finger (the
/// password follows) or ask for it in vain until the timeout: neither logs anyone in.
package enum LidSensor {
    package static let logindName = "org.freedesktop.login1"

    /// The state and where it was read (`logind`, or the ACPI file's path).
    package static func read(bus: SystemBus?, acpiDirectory: String, deadline: Deadline) -> (
        state: LidState, source: String
    ) {
        if let bus, case let .success(holder?) = bus.owner(of: logindName, deadline: deadline), holder.uid == 0,
            case let .success(.bool(closed)) = bus.property(
                holder.unique, "/org/freedesktop/login1",
                "org.freedesktop.login1.Manager", "LidClosed", deadline: deadline)
        {
            return (closed ? .closed : .open, "logind")
        }
        return readACPI(directory: acpiDirectory)
    }

    /// The ACPI lid files under `directory`, one folder per lid.
    package static func readACPI(directory: String) -> (state: LidState, source: String) {
        var states: [LidState] = []
        var sources: [String] = []
        for name in SafeFile.list(directory).sorted().prefix(8) where !name.hasPrefix(".") {
            let path = directory + "/" + name + "/state"
            guard let text = readSmall(path) else { continue }
            let state = LidState.parseACPI(text)
            states.append(state)
            if state != .unknown { sources.append(path) }
        }
        let state = LidState.combine(states)
        return (state, sources.first ?? directory)
    }

    /// At most 256 bytes of a small file (procfs files report size 0, so no size check).
    static func readSmall(_ path: String) -> String? {
        let fd = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }
}

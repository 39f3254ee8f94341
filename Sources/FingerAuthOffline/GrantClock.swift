import FingerAuthCore
import FingerAuthLoginDomain

#if canImport(Glibc)
import Glibc
#endif

/// The host's clocks as an offline grant is judged by them: the wall clock, and
/// CLOCK_BOOTTIME (monotonic, counts suspend) with the boot it belongs to
/// (`/proc/sys/kernel/random/boot_id`).
package enum GrantClock {
    package static func read() -> GrantClockReading? {
        var wall = timespec()
        var boot = timespec()
        guard clock_gettime(CLOCK_REALTIME, &wall) == 0, clock_gettime(CLOCK_BOOTTIME, &boot) == 0,
            let id = bootID()
        else { return nil }
        return GrantClockReading(
            wall: Int64(wall.tv_sec), bootID: id,
            bootMilliseconds: Int64(boot.tv_sec) &* 1000 &+ Int64(boot.tv_nsec) / 1_000_000)
    }

    private static func bootID() -> String? {
        let fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: bytes[0..<n], as: UTF8.self).filter { !$0.isWhitespace }
        return text.isEmpty ? nil : text
    }
}

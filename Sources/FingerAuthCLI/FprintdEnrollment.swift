import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

/// `fingerauth enroll` when fprintd holds the prints (`reader = fprintd`, or `auto` with
/// fprintd installed): the finger is enrolled through fprintd's D-Bus API (`Claim`,
/// `EnrollStart`, the `EnrollStatus` signals, `EnrollStop`, `Release`), so that GNOME Settings,
/// `fprintd-list` and the lock screen see the same finger. FingerAuth stores no print; the
/// caller then makes and registers the device key as always.
enum FprintdEnrollment {
    static func enroll(_ choice: ReaderBackendChoice, finger: Finger, user: String, force: Bool) throws(CommandError) {
        guard let client = choice.fprintd else {
            throw CommandError(
                "fprintd cannot be used (\(choice.fprintdProblem ?? "not reachable")); start it, or enroll with "
                    + "\(Fprintd.enrollCommand(user: user, finger: finger.rawValue)) once it runs")
        }
        if choice.fprintdFingers.contains(finger.rawValue) && !force {
            throw CommandError(
                "\(finger.rawValue) is already enrolled for \(user) in fprintd (use --force to replace it)")
        }
        say(
            "enrolling \(finger.rawValue) for \(user) through fprintd on \(client.readerName): place your finger on the reader, lift it, and repeat until every stage is done"
        )
        do {
            let device = try client.claim(user: user, deadline: .after(seconds: 10))
            defer { device.release() }
            try device.enroll(finger: finger.rawValue, deadline: .after(seconds: 120)) { progress in
                switch progress {
                case let .stage(done, total): say(total > 0 ? "stage \(done)/\(total)" : "stage \(done)")
                case let .retry(hint): say(hint)
                }
            }
        } catch {
            throw CommandError(
                "enrollment through fprintd failed: \(error.message) (or enroll with \(Fprintd.enrollCommand(user: user, finger: finger.rawValue)))"
            )
        }
        say("enrolled \(finger.rawValue) for \(user) in fprintd")
    }
}

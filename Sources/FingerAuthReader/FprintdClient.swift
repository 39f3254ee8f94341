import CFPrint
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// fprintd (`net.reactivated.Fprint`) on the system bus, as the login helper and the command
/// line use it: found, checked to be root's, and its default reader named. `claim(user:)`
/// gives a `FprintdDevice` for one user's verify or enroll.
///
/// Trust: the bus name must be held by uid 0 (the bus reports the holder's credentials);
/// every call goes to that holder's unique name, and only its signals are listened to.
package final class FprintdClient {
    let bus: SystemBus
    /// The unique bus name of the root-owned fprintd this client talks to.
    package let owner: String
    /// The default reader's object path and name.
    package let devicePath: String
    package let readerName: String
    /// True when fprintd was already running before this client asked (it may hold the
    /// reader); false when the bus started it for us.
    package let wasRunning: Bool

    init(bus: SystemBus, owner: String, devicePath: String, readerName: String, wasRunning: Bool) {
        self.bus = bus
        self.owner = owner
        self.devicePath = devicePath
        self.readerName = readerName
        self.wasRunning = wasRunning
    }

    /// Why fprintd cannot be used; `installed` false when the bus knows no fprintd at all
    /// (so `reader = auto` goes to libfprint without saying more).
    package struct Unavailable: Error, Equatable, Sendable {
        package let error: ReaderError
        package let installed: Bool
    }

    /// Whether fprintd holds its name on `bus` now, by a root process (no activation).
    package static func isRunning(on bus: SystemBus, deadline: Deadline) -> Bool {
        if case let .success(owner?) = bus.owner(of: Fprintd.busName, deadline: deadline), owner.uid == 0 {
            return true
        }
        return false
    }

    /// Finds fprintd on `bus`, starting it by D-Bus activation when it is installed but not
    /// running, and checks that root holds its name.
    package static func connect(on bus: SystemBus, deadline: Deadline) -> Result<FprintdClient, Unavailable> {
        func fail(_ reason: HelperFailure, _ text: String, installed: Bool = true) -> Result<FprintdClient, Unavailable>
        {
            .failure(Unavailable(error: ReaderError(reason, text), installed: installed))
        }
        var wasRunning = true
        var holder: (unique: String, uid: UInt32)?
        switch bus.owner(of: Fprintd.busName, deadline: deadline) {
        case let .failure(why): return fail(.noReader, "fprintd: \(why.message)")
        case let .success(found): holder = found
        }
        if holder == nil {
            wasRunning = false
            if case let .failure(why) = bus.start(Fprintd.busName, deadline: deadline) {
                let missing = why.errorName == "org.freedesktop.DBus.Error.ServiceUnknown"
                return fail(
                    .noReader,
                    missing
                        ? "fprintd is not running and not installed on this system bus"
                        : "fprintd could not be started: \(why.message)", installed: !missing)
            }
            switch bus.owner(of: Fprintd.busName, deadline: deadline) {
            case let .failure(why): return fail(.noReader, "fprintd: \(why.message)")
            case let .success(found): holder = found
            }
        }
        guard let holder else { return fail(.noReader, "fprintd started but does not hold its bus name") }
        guard holder.uid == 0 else {
            return fail(
                .deviceError, "\(Fprintd.busName) is held by uid \(holder.uid), not root: not fprintd, not believed")
        }
        let manager = bus.call(
            holder.unique, Fprintd.managerPath, Fprintd.managerInterface, "GetDefaultDevice", deadline: deadline)
        let path: String
        switch manager {
        case let .failure(why):
            if why.errorName == "net.reactivated.Fprint.Error.NoSuchDevice" {
                return fail(.noReader, "fprintd has no fingerprint reader")
            }
            return fail(.noReader, "fprintd: \(why.message)")
        case let .success(reply):
            guard let fields = reply.fields, fields.count == 1, case let .objectPath(found) = fields[0] else {
                return fail(.deviceError, "fprintd answered GetDefaultDevice with something else")
            }
            path = found
        }
        let name = bus.property(holder.unique, path, Fprintd.deviceInterface, "name", deadline: deadline)
        let readerName = (try? name.get())?.text ?? "fprintd reader"
        return .success(
            FprintdClient(
                bus: bus, owner: holder.unique, devicePath: path, readerName: readerName,
                wasRunning: wasRunning))
    }

    /// The fingers fprintd holds for `user` on its default reader (empty when none).
    package func enrolledFingers(user: String, deadline: Deadline) -> Result<[String], ReaderError> {
        switch bus.call(owner, devicePath, Fprintd.deviceInterface, "ListEnrolledFingers", [user], deadline: deadline) {
        case let .failure(why):
            if why.errorName == "net.reactivated.Fprint.Error.NoEnrolledPrints" { return .success([]) }
            return .failure(ReaderError(.deviceError, "fprintd could not list the fingers: \(why.message)"))
        case let .success(reply):
            guard let fields = reply.fields, fields.count == 1, let fingers = fields[0].strings else {
                return .failure(ReaderError(.deviceError, "fprintd answered ListEnrolledFingers with something else"))
            }
            return .success(fingers)
        }
    }

    /// Claims the reader for `user` (fprintd's `Claim`): verify and enroll then act for that
    /// user. Signals are listened to from before the claim.
    package func claim(user: String, deadline: Deadline) throws(ReaderError) -> FprintdDevice {
        let device = FprintdDevice(client: self)
        try device.claim(user: user, deadline: deadline)
        return device
    }
}

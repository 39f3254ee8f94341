import FingerAuthApproval
import FingerAuthCore
import FingerAuthReader
import FingerAuthSystem

/// logind's sessions on the system bus (org.freedesktop.login1, believed only when root holds
/// the name): `ListSessions`, then each session's `Active`, `Remote`, `Class` and
/// `LockedHint`. Every call is bounded by one deadline.
enum SeatReader {
    static let manager = "org.freedesktop.login1.Manager"
    static let session = "org.freedesktop.login1.Session"
    /// Sessions beyond this many are not read (a workstation has a handful).
    static let maxSessions = 64

    static func read(bus: SystemBus, deadline: Deadline) -> Result<[SeatSession], SystemBus.Failure> {
        let holder: (unique: String, uid: UInt32)
        switch bus.owner(of: LidSensor.logindName, deadline: deadline) {
        case let .failure(why): return .failure(why)
        case .success(nil): return .failure(SystemBus.Failure("nobody holds \(LidSensor.logindName) on the system bus"))
        case let .success(owner?):
            guard owner.uid == 0 else {
                return .failure(
                    SystemBus.Failure("\(LidSensor.logindName) is held by uid \(owner.uid), not root: not believed"))
            }
            holder = owner
        }
        let listed: [BusValue]
        switch bus.call(holder.unique, "/org/freedesktop/login1", manager, "ListSessions", deadline: deadline) {
        case let .failure(why): return .failure(why)
        case let .success(reply):
            guard case let .array(items)? = reply.fields?.first else {
                return .failure(SystemBus.Failure("ListSessions: an answer of another shape"))
            }
            listed = items
        }
        var sessions: [SeatSession] = []
        for item in listed.prefix(maxSessions) {
            guard case let .tuple(fields) = item, fields.count == 5, case let .uint32(uid) = fields[1],
                let user = fields[2].text, let seat = fields[3].text, case let .objectPath(path) = fields[4]
            else { return .failure(SystemBus.Failure("ListSessions: an entry of another shape")) }
            func flag(_ name: String) -> Result<Bool, SystemBus.Failure> {
                switch bus.property(holder.unique, path, session, name, deadline: deadline) {
                case let .success(.bool(value)): return .success(value)
                case .success: return .failure(SystemBus.Failure("\(name) of \(path): not a boolean"))
                case let .failure(why): return .failure(why)
                }
            }
            let sessionClass: String
            switch bus.property(holder.unique, path, session, "Class", deadline: deadline) {
            case let .success(.string(value)): sessionClass = value
            case .success: return .failure(SystemBus.Failure("Class of \(path): not a string"))
            case let .failure(why): return .failure(why)
            }
            switch (flag("Active"), flag("Remote"), flag("LockedHint")) {
            case let (.success(active), .success(remote), .success(locked)):
                sessions.append(
                    SeatSession(
                        user: user, uid: uid, seat: seat, active: active, remote: remote, sessionClass: sessionClass,
                        locked: locked))
            case let (.failure(why), _, _), let (_, .failure(why), _), let (_, _, .failure(why)):
                return .failure(why)
            }
        }
        return .success(sessions)
    }
}

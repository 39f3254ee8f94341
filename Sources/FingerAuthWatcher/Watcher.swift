import CSystem
import FingerAuthApproval
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The watcher's main thread: every `--seats-every` seconds, and at once on a signal of
/// logind's, who sits at this workstation
/// (logind, `SeatReader`) and has a device key here (`WatchEligibility`); a `UserWatch` is
/// started for each and stopped when she leaves, locks the screen or loses her key. D-Bus
/// is used on this thread only (and in the notifier children).
final class Watcher {
    let settings: WatcherSettings
    private var running: [String: UserWatch] = [:]
    private var stopping: [UserWatch] = []
    private var bus: SystemBus?
    /// logind's signals (sessions new and removed, their properties changed: a lock), so that
    /// a change is read at once rather than at the next round.
    private var logindSignals: BusSignals?
    private var logindProblem: String?

    /// The package's version, as `fingerauth-agent --version` says it.
    static let version = "0.1.0"

    init(settings: WatcherSettings) { self.settings = settings }

    func run() -> Never {
        log("started; sessions read every \(settings.seatSeconds) s from logind at \(settings.options.systemBus)")
        while true {
            update(wanted: wantedUsers())
            stopping = stopping.filter { !$0.reapIfFinished() }
            let next = Deadline.after(seconds: Double(settings.seatSeconds))
            if let bus, let signals = logindSignals {
                if bus.iterate(until: next, { signals.take() != nil }) {
                    // A burst of signals is one change: read logind once after it.
                    usleep(250_000)
                    _ = bus.iterate(until: .after(seconds: 0.01)) { false }
                    while signals.take() != nil {}
                }
            } else {
                usleep(useconds_t(settings.seatSeconds) * 1_000_000)
            }
        }
    }

    /// The users to watch now, with their uid; none while logind does not answer.
    private func wantedUsers() -> [String: UInt32] {
        if bus == nil {
            bus = try? SystemBus.connect(socketPath: settings.options.systemBus, deadline: .after(seconds: 2)).get()
            logindSignals = bus.map { BusSignals(bus: $0, sender: LidSensor.logindName, path: nil, interface: nil) }
        }
        guard let bus else { return logindFailed("no system bus at \(settings.options.systemBus)") }
        switch SeatReader.read(bus: bus, deadline: .after(seconds: 2)) {
        case let .failure(why):
            logindSignals = nil
            self.bus = nil
            return logindFailed(why.message)
        case let .success(sessions):
            if logindProblem != nil { log("logind answers again") }
            logindProblem = nil
            return WatchEligibility.watched(sessions: sessions, keyed: keyedUsers())
        }
    }

    private func logindFailed(_ why: String) -> [String: UInt32] {
        if logindProblem != why {
            log("logind: \(why); no approvals are watched until it answers (retrying every \(settings.seatSeconds) s)")
        }
        logindProblem = why
        return [:]
    }

    /// The users with a device key under the state directory.
    private func keyedUsers() -> Set<String> {
        let root = settings.options.stateDirectory
        var out: Set<String> = []
        for name in SafeFile.list(root + "/users") where UserName.isValid(name) {
            if SafeFile.exists(StatePaths(root: root, user: name).deviceKey) { out.insert(name) }
        }
        return out
    }

    private func update(wanted: [String: UInt32]) {
        for (user, watch) in running where wanted[user] != watch.uid {
            log("no longer watching \(user): no active, unlocked session on a local seat (or no device key)")
            watch.stop()
            stopping.append(watch)
            running[user] = nil
        }
        for (user, uid) in wanted where running[user] == nil {
            guard case let .found(account) = SystemUserDatabase().account(uid: uid), account.name == user else {
                log("\(user): uid \(uid) of the session is not \(user)'s account: not watched")
                continue
            }
            let watch = UserWatch(user: user, uid: uid, gid: account.gid, settings: settings)
            guard watch.start() else { continue }
            log("watching approvals for \(user) (an active, unlocked session on a local seat)")
            running[user] = watch
        }
    }

    /// This executable's path (`/proc/self/exe`), for the notifier children. After a package
    /// upgrade the kernel adds ` (deleted)`: the new file at the same path is the one to run.
    static func ownPath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "/usr/libexec/fingerauth/fingerauth-watcher" }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
    }
}

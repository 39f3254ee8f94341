import CFPrint
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// fprintd's default reader, claimed for one user: verify (`VerifyStart` "any", the
/// `VerifyFingerSelected` and `VerifyStatus` signals, `VerifyStop`), enroll, and `release()`,
/// which the owner calls on every path (and `deinit` once more: a claim must never outlive
/// the login). A process that dies holding the claim is released by fprintd itself when
/// its bus connection goes.
///
/// Signals: everything the fprintd connection emits is heard. Only `VerifyFingerSelected`,
/// `VerifyStatus` and `EnrollStatus` of the claimed reader and the reader's property changes
/// are expected; any other signal of fprintd's, fprintd losing its name, or a closed bus is
/// a failure, never a match.
package final class FprintdDevice {
    let client: FprintdClient
    private let inbox = SignalInbox()
    private var subscriptions: [guint] = []
    private(set) var claimed = false

    init(client: FprintdClient) {
        self.client = client
        let connection = client.bus.connection
        let data = Unmanaged.passUnretained(inbox).toOpaque()
        subscriptions.append(
            g_dbus_connection_signal_subscribe(
                connection, client.owner, nil, nil, nil, nil,
                G_DBUS_SIGNAL_FLAGS_NONE, SignalInbox.callback, data, nil))
        subscriptions.append(
            g_dbus_connection_signal_subscribe(
                connection, "org.freedesktop.DBus", "org.freedesktop.DBus",
                "NameOwnerChanged", "/org/freedesktop/DBus", Fprintd.busName,
                G_DBUS_SIGNAL_FLAGS_NONE, SignalInbox.callback, data, nil))
    }

    deinit {
        release()
        for id in subscriptions { g_dbus_connection_signal_unsubscribe(client.bus.connection, id) }
    }

    /// The reader's name as fprintd gives it.
    package var name: String { client.readerName }

    func claim(user: String, deadline: Deadline) throws(ReaderError) {
        switch call("Claim", [user], deadline: deadline) {
        case .success: claimed = true
        case let .failure(why):
            if why.errorName == "net.reactivated.Fprint.Error.AlreadyInUse" {
                throw ReaderError(.busy, "reader in use: fprintd is busy with another login or enrollment")
            }
            if why.errorName == "net.reactivated.Fprint.Error.PermissionDenied" {
                throw ReaderError(.deviceError, "fprintd refused the claim (polkit): \(why.message)")
            }
            throw ReaderError(.deviceError, "fprintd: \(why.message)")
        }
    }

    /// Releases the reader (`Release`), at most once, within two seconds.
    package func release() {
        guard claimed else { return }
        claimed = false
        _ = call("Release", [], deadline: .after(seconds: 2))
    }

    /// One verification against all of the user's fprintd prints: `.match` with the finger
    /// fprintd selected (`any` when it identified among several), `.noMatch`, or an error.
    /// Retry requests go to `events` and the scan goes on.
    package func verify(deadline: Deadline, events: (HelperMessage) -> Void) throws(ReaderError) -> VerifyResult {
        inbox.clear()
        switch call("VerifyStart", ["any"], deadline: deadline) {
        case .success: break
        case let .failure(why):
            if why.errorName == "net.reactivated.Fprint.Error.NoEnrolledPrints" {
                throw ReaderError(.noPrints, "the user has no finger enrolled in fprintd")
            }
            throw ReaderError(.deviceError, "fprintd could not start the scan: \(why.message)")
        }
        defer { _ = call("VerifyStop", [], deadline: .after(seconds: 2)) }
        var selected: String?
        while true {
            let signal = try next(deadline: deadline)
            switch (signal.interface, signal.member) {
            case (Fprintd.deviceInterface, "VerifyFingerSelected"):
                guard let finger = signal.arguments.first?.text, signal.arguments.count == 1 else {
                    throw unexpected(signal)
                }
                selected = finger
            case (Fprintd.deviceInterface, "VerifyStatus"):
                guard signal.arguments.count == 2, let result = signal.arguments[0].text,
                    case let .bool(done) = signal.arguments[1]
                else { throw unexpected(signal) }
                switch Fprintd.VerifyStatus(result) {
                case .match:
                    guard done else { throw unexpected(signal) }
                    if let selected { return .match(finger: selected) }
                    return .match(finger: try fingerSelectedAfterwards())
                case .noMatch:
                    guard done else { throw unexpected(signal) }
                    return .noMatch
                case let .retry(hint):
                    events(.retry(hint: hint))
                case .disconnected:
                    throw ReaderError(.removed, "reader removed (fprintd: verify-disconnected)")
                case .failed:
                    throw removedOr(ReaderError(.deviceError, "fprintd: the reader failed (verify-unknown-error)"))
                case let .unknown(word):
                    throw ReaderError(.deviceError, "fprintd sent an unknown verify status \(word)")
                }
            default:
                throw unexpected(signal)
            }
        }
    }

    /// fprintd emits `VerifyFingerSelected` right after its reply to `VerifyStart`; a finger
    /// already on the reader can make `VerifyStatus` come first. The selection is then
    /// waited for briefly (it is on its way); `any` when it does not come.
    private func fingerSelectedAfterwards() throws(ReaderError) -> String {
        let deadline = Deadline.after(seconds: 0.5)
        while deadline.remainingMilliseconds > 0 {
            let signal: BusSignal
            do { signal = try next(deadline: deadline) } catch { return "any" }
            guard signal.interface == Fprintd.deviceInterface, signal.member == "VerifyFingerSelected",
                signal.arguments.count == 1, let finger = signal.arguments[0].text
            else { throw unexpected(signal) }
            return finger
        }
        return "any"
    }

    /// Enrolls `finger` for the claimed user through fprintd: `progress` hears each stage and
    /// each hint. Errors say what the person can do (duplicate finger, sensor full).
    package func enroll(finger: String, deadline: Deadline, progress: (EnrollProgress) -> Void) throws(ReaderError) {
        inbox.clear()
        if case let .failure(why) = call("EnrollStart", [finger], deadline: deadline) {
            throw ReaderError(.deviceError, "fprintd could not start the enrollment: \(why.message)")
        }
        defer { _ = call("EnrollStop", [], deadline: .after(seconds: 2)) }
        var stages = 0
        while true {
            let signal = try next(deadline: deadline)
            guard signal.interface == Fprintd.deviceInterface, signal.member == "EnrollStatus",
                signal.arguments.count == 2,
                let result = signal.arguments[0].text, case let .bool(done) = signal.arguments[1]
            else {
                throw unexpected(signal)
            }
            switch Fprintd.EnrollStatus(result) {
            case .completed:
                progress(.stage(completed: stages + 1, total: max(stages + 1, enrollStages())))
                return
            case .stagePassed:
                stages += 1
                progress(.stage(completed: stages, total: max(stages + 1, enrollStages())))
            case let .retry(hint): progress(.retry(hint: hint))
            case .duplicate:
                throw ReaderError(
                    .deviceError,
                    "the sensor already holds this finger, for this or another user (fprintd: enroll-duplicate): enroll another finger, or delete it where it was enrolled"
                )
            case .full:
                throw ReaderError(.deviceError, "the sensor has no room for another print (fprintd: enroll-data-full)")
            case .disconnected: throw ReaderError(.removed, "reader removed (fprintd: enroll-disconnected)")
            case .failed: throw ReaderError(.deviceError, "fprintd: the enrollment failed (\(result))")
            case let .unknown(word): throw ReaderError(.deviceError, "fprintd sent an unknown enroll status \(word)")
            }
            if done {
                throw ReaderError(.deviceError, "fprintd ended the enrollment without completing it (\(result))")
            }
        }
    }

    private func enrollStages() -> Int {
        guard
            case let .int32(n)? = try? client.bus.property(
                client.owner, client.devicePath, Fprintd.deviceInterface,
                "num-enroll-stages", deadline: .after(seconds: 1)
            ).get()
        else { return 0 }
        return Int(n)
    }

    private func call(_ method: String, _ arguments: [String], deadline: Deadline) -> Result<
        BusValue, SystemBus.Failure
    > {
        client.bus.call(client.owner, client.devicePath, Fprintd.deviceInterface, method, arguments, deadline: deadline)
    }

    /// The next signal that matters: the reader's property changes are skipped, fprintd
    /// leaving the bus or the bus closing is an error, the deadline is `.timeout`.
    private func next(deadline: Deadline) throws(ReaderError) -> BusSignal {
        while true {
            if g_dbus_connection_is_closed(client.bus.connection) != 0 {
                throw ReaderError(.deviceError, "the system bus connection closed during the scan")
            }
            guard
                client.bus.iterate(
                    until: deadline, { !inbox.isEmpty || g_dbus_connection_is_closed(client.bus.connection) != 0 }),
                let signal = inbox.take()
            else {
                if g_dbus_connection_is_closed(client.bus.connection) != 0 { continue }
                throw ReaderError.timeout
            }
            if signal.interface == "org.freedesktop.DBus" {
                throw ReaderError(.deviceError, "fprintd stopped during the scan (it left the bus)")
            }
            if signal.sender != client.owner { throw unexpected(signal) }
            if isRemoval(signal) { throw ReaderError(.removed, "reader removed during the scan (fprintd)") }
            if signal.interface == "org.freedesktop.DBus.Properties" && signal.member == "PropertiesChanged"
                && signal.path == client.devicePath
            {
                continue
            }
            guard signal.path == client.devicePath else { throw unexpected(signal) }
            return signal
        }
    }

    /// fprintd's object manager dropping the claimed reader: it was unplugged.
    private func isRemoval(_ signal: BusSignal) -> Bool {
        signal.interface == "org.freedesktop.DBus.ObjectManager" && signal.member == "InterfacesRemoved"
            && signal.arguments.first?.text == client.devicePath
    }

    /// fprintd 1.94 reports an unplugged reader as `verify-unknown-error`, and drops the
    /// reader's object once it is released: so release now and wait briefly for that.
    private func removedOr(_ failure: ReaderError) -> ReaderError {
        _ = call("VerifyStop", [], deadline: .after(seconds: 1))
        release()
        let deadline = Deadline.after(seconds: 0.5)
        var removed = false
        _ = client.bus.iterate(until: deadline) {
            while let signal = inbox.take() {
                if signal.sender == client.owner && isRemoval(signal) { removed = true }
            }
            return removed
        }
        return removed ? ReaderError(.removed, "reader removed during the scan (fprintd)") : failure
    }

    private func unexpected(_ signal: BusSignal) -> ReaderError {
        ReaderError(
            .deviceError,
            "fprintd sent an unexpected signal \(signal.interface).\(signal.member) on \(signal.path): not believed")
    }
}

/// One signal as it arrived.
struct BusSignal {
    let sender: String
    let path: String
    let interface: String
    let member: String
    let arguments: [BusValue]
}

/// The signals GDBus delivered on the main context, in order, until taken. At most 256 are
/// kept: a peer that floods the bus fills it, and the next `take` reports the overflow as a
/// signal of its own kind (never dropped silently).
final class SignalInbox {
    private var queue: [BusSignal] = []
    private var overflowed = false
    static let limit = 256

    var isEmpty: Bool { queue.isEmpty && !overflowed }

    func clear() {
        queue.removeAll()
    }

    func take() -> BusSignal? {
        if overflowed {
            overflowed = false
            queue.removeAll()
            return BusSignal(sender: "", path: "", interface: "(overflow)", member: "too many signals", arguments: [])
        }
        return queue.isEmpty ? nil : queue.removeFirst()
    }

    func add(_ signal: BusSignal) {
        if queue.count >= SignalInbox.limit { overflowed = true } else { queue.append(signal) }
    }

    static let callback: GDBusSignalCallback = { _, sender, path, interface, member, parameters, data in
        guard let data else { return }
        let inbox = Unmanaged<SignalInbox>.fromOpaque(data).takeUnretainedValue()
        let text = { (p: UnsafePointer<gchar>?) in p.map { String(cString: $0) } ?? "" }
        let arguments = parameters.map { BusValue($0).fields ?? [] } ?? []
        inbox.add(
            BusSignal(
                sender: text(sender), path: text(path), interface: text(interface), member: text(member),
                arguments: arguments))
    }
}

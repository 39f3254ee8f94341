import CFPrint
import FingerAuthCore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// A private connection to the system bus (GDBus), for the login helper and the command
/// line: fprintd and logind answer there. The approval watcher's notifier uses it for a
/// user's session bus too (its socket path from the watcher's own setting). The address is a socket path from root-owned
/// configuration (`system_bus`) — never `DBUS_SYSTEM_BUS_ADDRESS`: the helper has no
/// environment, and whoever chose the bus would choose who answers as fprintd.
///
/// Every call is bounded (`timeout_msec`, or the deadline of a connect); a service is
/// believed only when the bus says its name belongs to uid 0 (`owner(of:)`), and calls then
/// go to the owner's unique name, so that a name that changes hands mid-login reaches
/// nobody. Use it from one thread; signals arrive while `iterate(until:)` runs the default
/// main context.
package final class SystemBus {
    let connection: OpaquePointer
    package let address: String

    private init(connection: OpaquePointer, address: String) {
        self.connection = connection
        self.address = address
    }

    deinit {
        // Closing flushes nothing we need; a dead peer must not hold us.
        g_dbus_connection_close(connection, nil, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(connection))
    }

    /// Why the bus could not be used.
    package struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        package let message: String
        /// The D-Bus error name when the bus or the service answered with one.
        package let errorName: String?
        package init(_ message: String, errorName: String? = nil) {
            self.message = message
            self.errorName = errorName
        }
        package var description: String { message }
    }

    /// Connects to the bus at `socketPath` (`unix:path=…`, authenticated as this process's
    /// uid), within `deadline`. A missing socket fails at once.
    /// `kind` names the bus in the failures (the watcher's notifier: `session bus`).
    package static func connect(socketPath: String, deadline: Deadline, kind: String = "system bus") -> Result<
        SystemBus, Failure
    > {
        guard socketPath.hasPrefix("/"), !socketPath.contains(","), !socketPath.contains(";") else {
            return .failure(Failure("the \(kind) path \(socketPath) is not a socket path"))
        }
        guard access(socketPath, F_OK) == 0 else {
            return .failure(Failure("no \(kind) at \(socketPath)"))
        }
        let address = "unix:path=" + socketPath
        let flags = GDBusConnectionFlags(
            rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        let outcome = AsyncCall.run(deadline: deadline) { cancellable, callback, data in
            g_dbus_connection_new_for_address(address, flags, nil, cancellable, callback, data)
        }
        guard let result = outcome else {
            return .failure(Failure("the \(kind) at \(socketPath) did not answer in time"))
        }
        defer { g_object_unref(UnsafeMutableRawPointer(result)) }
        var error: UnsafeMutablePointer<GError>? = nil
        guard let connection = g_dbus_connection_new_for_address_finish(result, &error) else {
            return .failure(SystemBus.take(error, context: "cannot connect to the \(kind) at \(socketPath)"))
        }
        return .success(SystemBus(connection: connection, address: address))
    }

    /// Calls `method` and returns its reply (a tuple). `autoStart` lets the bus start the
    /// service by D-Bus activation.
    package func call(
        _ destination: String, _ path: String, _ interface: String, _ method: String,
        _ arguments: [String] = [], deadline: Deadline, autoStart: Bool = false
    ) -> Result<BusValue, Failure> {
        call(
            destination, path, interface, method, typed: arguments.map(BusArgument.string), deadline: deadline,
            autoStart: autoStart)
    }

    /// Calls `method` with arguments of any of `BusArgument`'s types and returns its reply.
    package func call(
        _ destination: String, _ path: String, _ interface: String, _ method: String,
        typed arguments: [BusArgument], deadline: Deadline, autoStart: Bool = false
    ) -> Result<BusValue, Failure> {
        let ms = deadline.remainingMilliseconds
        guard ms > 0 else { return .failure(Failure("no time left to call \(method)")) }
        let flags = autoStart ? G_DBUS_CALL_FLAGS_NONE : G_DBUS_CALL_FLAGS_NO_AUTO_START
        var error: UnsafeMutablePointer<GError>? = nil
        let reply = g_dbus_connection_call_sync(
            connection, destination, path, interface, method,
            arguments.isEmpty ? nil : BusArgument.tuple(arguments), nil,
            flags, gint(clamping: ms), nil, &error)
        guard let reply else { return .failure(SystemBus.take(error, context: method)) }
        defer { g_variant_unref(reply) }
        return .success(BusValue(reply))
    }

    /// One property (`org.freedesktop.DBus.Properties.Get`), unwrapped from its variant.
    package func property(
        _ destination: String, _ path: String, _ interface: String, _ name: String,
        deadline: Deadline
    ) -> Result<BusValue, Failure> {
        call(destination, path, "org.freedesktop.DBus.Properties", "Get", [interface, name], deadline: deadline).flatMap
        { reply in
            guard let fields = reply.fields, fields.count == 1, case let .variant(value) = fields[0] else {
                return .failure(Failure("\(interface).\(name): an answer of another shape"))
            }
            return .success(value)
        }
    }

    /// Who holds `name` now: its unique name and the uid the bus knows for that connection
    /// (`GetNameOwner`, `GetConnectionUnixUser`: the kernel's credentials at connect time, not
    /// the owner's word). Nil when nobody holds it.
    package func owner(of name: String, deadline: Deadline) -> Result<(unique: String, uid: UInt32)?, Failure> {
        let bus = "org.freedesktop.DBus"
        let path = "/org/freedesktop/DBus"
        switch call(bus, path, bus, "GetNameOwner", [name], deadline: deadline) {
        case let .failure(failure):
            if failure.errorName == "org.freedesktop.DBus.Error.NameHasNoOwner" { return .success(nil) }
            return .failure(failure)
        case let .success(reply):
            guard let unique = reply.fields?.first?.text, unique.hasPrefix(":") else {
                return .failure(Failure("GetNameOwner gave no unique name for \(name)"))
            }
            switch call(bus, path, bus, "GetConnectionUnixUser", [unique], deadline: deadline) {
            case let .failure(failure): return .failure(failure)
            case let .success(reply):
                guard let fields = reply.fields, fields.count == 1, case let .uint32(uid) = fields[0] else {
                    return .failure(Failure("GetConnectionUnixUser gave no uid for \(name)"))
                }
                return .success((unique, uid))
            }
        }
    }

    /// Asks the bus to start the service of `name` (D-Bus activation). False when it cannot
    /// (not installed, or it failed to start).
    package func start(_ name: String, deadline: Deadline) -> Result<Void, Failure> {
        let bus = "org.freedesktop.DBus"
        var args: [OpaquePointer?] = [g_variant_new_string(name), g_variant_new_uint32(0)]
        let tuple = args.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
        var error: UnsafeMutablePointer<GError>? = nil
        let reply = g_dbus_connection_call_sync(
            connection, bus, "/org/freedesktop/DBus", bus, "StartServiceByName", tuple, nil,
            G_DBUS_CALL_FLAGS_NONE, gint(clamping: max(1, deadline.remainingMilliseconds)),
            nil, &error)
        guard let reply else { return .failure(SystemBus.take(error, context: "cannot start \(name)")) }
        g_variant_unref(reply)
        return .success(())
    }

    /// Runs the default main context (signals, timers) until `done` says so or `deadline`
    /// passes; true when `done` said so.
    package func iterate(until deadline: Deadline, _ done: () -> Bool) -> Bool {
        MainContextWait.run(until: deadline, done)
    }

    /// A `GError` from GDBus as a `Failure` (freed here), with its D-Bus error name.
    package static func take(_ error: UnsafeMutablePointer<GError>?, context: String) -> Failure {
        guard let error else { return Failure(context + ": unknown error") }
        defer { g_error_free(error) }
        var name: String?
        if let remote = g_dbus_error_get_remote_error(error) {
            name = String(cString: remote)
            g_free(remote)
            g_dbus_error_strip_remote_error(error)
        }
        let text = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
        return Failure(context + ": " + text, errorName: name)
    }
}

/// Runs the default main context until a condition holds or a deadline passes: a GLib
/// timeout source wakes the loop at the deadline, so that a silent peer cannot hold it.
enum MainContextWait {
    static func run(until deadline: Deadline, _ done: () -> Bool) -> Bool {
        if done() { return true }
        let timer = WakeTimer(deadline: deadline)
        defer { timer.cancel() }
        while !done() {
            guard deadline.remainingMilliseconds > 0 else { return done() }
            g_main_context_iteration(nil, 1)
        }
        return true
    }
}

/// A timeout source on the default main context that only wakes `g_main_context_iteration`.
final class WakeTimer {
    private var sourceID: guint = 0

    init(deadline: Deadline) {
        let ms = max(1, deadline.remainingMilliseconds)
        sourceID = g_timeout_add(
            guint(clamping: ms),
            { data in
                guard let data else { return gboolean(0) }
                Unmanaged<WakeTimer>.fromOpaque(data).takeUnretainedValue().sourceID = 0
                return gboolean(0) // G_SOURCE_REMOVE
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    func cancel() {
        if sourceID != 0 { g_source_remove(sourceID) }
        sourceID = 0
    }

    deinit { cancel() }
}

/// One GIO asynchronous call awaited on the default main context with a deadline; at the
/// deadline the call is cancelled and its callback (which GIO always makes) awaited briefly.
enum AsyncCall {
    final class Slot {
        var result: OpaquePointer?
        var done = false
    }

    /// `start` begins the call with the cancellable, the callback and its data. Returns the
    /// `GAsyncResult` (a reference the caller unrefs), or nil at the deadline.
    static func run(
        deadline: Deadline,
        start: (UnsafeMutablePointer<GCancellable>?, GAsyncReadyCallback, gpointer) -> Void
    ) -> OpaquePointer? {
        let slot = Slot()
        let cancellable = g_cancellable_new()
        defer { if let cancellable { g_object_unref(UnsafeMutableRawPointer(cancellable)) } }
        let retained = Unmanaged.passRetained(slot)
        start(
            cancellable,
            { _, result, data in
                guard let data else { return }
                let slot = Unmanaged<Slot>.fromOpaque(data).takeRetainedValue()
                if let result { g_object_ref(UnsafeMutableRawPointer(result)) }
                slot.result = result
                slot.done = true
            }, retained.toOpaque())
        if MainContextWait.run(until: deadline, { slot.done }), slot.done { return slot.result }
        g_cancellable_cancel(cancellable)
        // GIO calls back after a cancel; wait for it a little so the slot is released.
        _ = MainContextWait.run(until: .after(seconds: 0.5), { slot.done })
        if let result = slot.result { g_object_unref(UnsafeMutableRawPointer(result)) }
        return nil
    }
}

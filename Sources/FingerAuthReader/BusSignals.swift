import CFPrint
import FingerAuthCore
import FingerAuthSystem

/// The signals of one sender's interface on a bus, kept in order until taken (at most
/// `SignalInbox.limit`; an overflow is reported, never dropped silently). They arrive while
/// `SystemBus.iterate(until:)` runs the default main context. Unsubscribed in deinit.
package final class BusSignals {
    private let bus: SystemBus
    private let inbox = SignalInbox()
    private var subscription: guint = 0

    /// Subscribes to the signals from `sender` (of `interface` on object `path`, when given).
    package init(bus: SystemBus, sender: String, path: String?, interface: String?) {
        self.bus = bus
        subscription = g_dbus_connection_signal_subscribe(
            bus.connection, sender, interface, nil, path, nil, G_DBUS_SIGNAL_FLAGS_NONE, SignalInbox.callback,
            Unmanaged.passUnretained(inbox).toOpaque(), nil)
    }

    deinit {
        if subscription != 0 { g_dbus_connection_signal_unsubscribe(bus.connection, subscription) }
    }

    /// The next signal: its member (`(overflow)` after a flood) and arguments; nil when none is waiting.
    package func take() -> (member: String, arguments: [BusValue])? {
        guard let signal = inbox.take() else { return nil }
        return (signal.interface == "(overflow)" ? "(overflow)" : signal.member, signal.arguments)
    }
}

import CSystem
import FingerAuthCore
import FingerAuthReader
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth-watcher --notify UID GID SOCKET`: one notification, in a child of its own
/// that has become the user (no supplementary groups, an empty environment, the parent's
/// death kills it), so that the user's session bus sees her own uid and root never talks to
/// a bus that she runs. Reads the summary and the body (one line each) on standard input,
/// calls org.freedesktop.Notifications.Notify with a "Not me" action, and says on standard
/// output: `SHOWN <id>`, then `NOT-ME` when the person chooses it, `CLOSED <reason>` when the
/// notification goes; `FAILED <why>` when it cannot. The end of its standard input (the
/// watcher: the approval has ended) closes the notification (`CloseNotification`).
enum Notifier {
    static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    /// A notification lives at most this long (an approval lives ≤ 60 s).
    static let lifetimeSeconds = 120.0
    static let callSeconds = 3.0

    static func run(_ words: [String]) -> Int32 {
        guard words.count == 3, let uid = UInt32(words[0]), let gid = UInt32(words[1]), uid != 0,
            words[2].hasPrefix("/")
        else { return fail("usage: fingerauth-watcher --notify UID GID SOCKET") }
        guard fa_become_user(uid_t(uid), gid_t(gid)) == 0, getuid() == uid, geteuid() == uid, getgid() == gid
        else { return fail("cannot become uid \(uid)") }
        guard let lines = readInput(count: 2, until: .after(seconds: 2)) else { return fail("no text to show") }
        let bus: SystemBus
        switch SystemBus.connect(socketPath: words[2], deadline: .after(seconds: callSeconds), kind: "session bus") {
        case let .success(connected): bus = connected
        case let .failure(why): return fail(why.message)
        }
        let signals = BusSignals(bus: bus, sender: name, path: path, interface: name)
        let id: UInt32
        switch bus.call(
            name, path, name, "Notify",
            typed: [
                .string("FingerAuth"), .uint32(0), .string("dialog-password"), .string(lines[0]), .string(lines[1]),
                .strings(["not-me", "Not me"]), .emptyDictionary, .int32(0),
            ], deadline: .after(seconds: callSeconds))
        {
        case let .success(reply):
            guard case let .uint32(given)? = reply.fields?.first else { return fail("Notify gave no id") }
            id = given
        case let .failure(why): return fail("Notify: \(why.message)")
        }
        say("SHOWN \(id)")
        let end = Deadline.after(seconds: lifetimeSeconds)
        while end.remainingMilliseconds > 0 {
            _ = bus.iterate(until: .after(seconds: 0.2)) { false }
            while let signal = signals.take() {
                let fields = signal.arguments
                guard case let .uint32(about)? = fields.first, about == id else { continue }
                if signal.member == "ActionInvoked", fields.count == 2, fields[1].text == "not-me" { say("NOT-ME") }
                if signal.member == "NotificationClosed" {
                    if case let .uint32(reason)? = fields.dropFirst().first {
                        say("CLOSED \(reason)")
                    } else {
                        say("CLOSED 0")
                    }
                    return 0
                }
            }
            if inputEnded() { break }
        }
        _ = bus.call(
            name, path, name, "CloseNotification", typed: [.uint32(id)], deadline: .after(seconds: callSeconds))
        return 0
    }

    private static func fail(_ why: String) -> Int32 {
        say("FAILED " + TerminalText.escaped(String(why.prefix(200))))
        return 1
    }

    private static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        bytes.withUnsafeBytes { _ = fa_write(1, $0.baseAddress, $0.count) }
    }

    /// `count` lines of standard input (each ≤ 1 KiB, printable), read until `deadline`.
    private static func readInput(count: Int, until deadline: Deadline) -> [String]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while bytes.filter({ $0 == 0x0a }).count < count {
            var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            guard bytes.count < 4096, fa_poll(&ready, 1, deadline.remaining) == 1 else { return nil }
            let n = chunk.withUnsafeMutableBytes { fa_read(0, $0.baseAddress, $0.count) }
            guard n > 0 else { return nil }
            bytes += chunk[0..<n]
        }
        let lines = bytes.split(separator: 0x0a, omittingEmptySubsequences: false).prefix(count).map {
            String(decoding: $0.prefix(1024), as: UTF8.self)
        }
        return lines.count == count ? lines : nil
    }

    /// Whether standard input has ended or has something (either means: close now).
    private static func inputEnded() -> Bool {
        var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        return fa_poll(&ready, 1, 0) != 0
    }
}

import CSystem
import FingerAuthSystem

/// Whether a login is typed at this machine's seat, positively — the rule that decides
/// whether the reader may be armed once no fact says "remote" (docs/ARCHITECTURE.md,
/// "Remote sessions"). A person at the desk must not approve, with their finger, a
/// command typed from elsewhere: through a terminal multiplexer attached over ssh, a user
/// unit started from ssh, keystrokes sent to the X display, a job of cron or at.
///
/// Two modes, after what the host can tell:
/// - **logind** (systemd runs): the login's own logind session (its cgroup's
///   `session-N.scope`, else its audit session id) must be on a seat, active and not
///   remote. On that session's own virtual console the login is local; on one of its
///   pseudo-terminals (a terminal window, a multiplexer's pane), or in that user's service
///   manager while their graphical session is in front (a desktop's terminal emulators
///   run there, outside any session), it is local unless a remote session of the same
///   user is live. No session of its own (cron, at, a service): not local.
/// - **records** (no logind): on a virtual console the login is local; anywhere else it is
///   local unless a remote session of the same user is live.
package struct LocalSeat {
    package enum Mode: String, Sendable { case logind, records }

    package var logind = LogindState()
    /// The process's own facts (audit session id, controlling terminal) and the records.
    package var session: RemoteSession
    package var procDirectory = "/proc"
    package var trace: (String) -> Void = { _ in }

    package init(session: RemoteSession) { self.session = session }

    package var mode: Mode { logind.isRunning ? .logind : .records }

    /// Why this login is not positively local (it is then skipped like a remote one), or
    /// nil when the reader may be armed. `uids`: whose live remote session makes a
    /// pseudo-terminal doubtful (the user logging in, a setuid host's caller, the login uid);
    /// `name` turns a uid into a user name for the message.
    package func notLocalReason(uids: Set<UInt32>, name: (UInt32) -> String) -> String? {
        let terminal = session.controllingTerminal()
        let on = terminal ?? "no terminal"
        switch mode {
        case .records:
            trace("local seat: records mode (no logind); controlling terminal \(on)")
            if let terminal, LocalSeat.isVirtualConsole(terminal) { return nil }
            return unlessRemoteIsLive(uids: uids, name: name, here: "on \(on)")
        case .logind:
            switch ownSession() {
            case let .session(id, source):
                guard let facts = logind.session(id) else { return "logind has no record of session \(id) (\(source))" }
                trace(
                    "local seat: logind session \(id) (\(source)): seat \(facts.seat ?? "-"), active \(facts.active), remote \(facts.remote), type \(facts.type ?? "-"), on \(on)"
                )
                if facts.remote { return "logind session \(id) is remote" }
                guard let seat = facts.seat else { return "logind session \(id) is on no seat" }
                guard facts.active else { return "logind session \(id) is not the active one on \(seat)" }
                if let terminal, facts.isOwnTerminal(terminal) { return nil }
                return unlessRemoteIsLive(uids: uids, name: name, here: "logind session \(id) on \(seat), on \(on)")
            case let .userManager(uid):
                guard let display = logind.user(uid)?.display, let facts = logind.session(display),
                    facts.seat != nil, facts.active, !facts.remote
                else {
                    return
                        "started by \(name(uid))'s service manager (a user unit), and \(name(uid)) has no active local session on a seat"
                }
                trace(
                    "local seat: \(name(uid))'s service manager; graphical session \(display) in front on \(facts.seat ?? "-")"
                )
                return unlessRemoteIsLive(
                    uids: uids.union([uid]), name: name, here: "a user unit of \(name(uid)), on \(on)")
            case let .none(unit):
                return "no logind session of its own (\(unit ?? "no unit"): cron, at, a service)"
            }
        }
    }

    /// The virtual consoles tty1…tty63 (the seat's own keyboard; a pseudo-terminal is
    /// `pts/N`).
    package static func isVirtualConsole(_ terminal: String) -> Bool {
        guard terminal.hasPrefix("tty"), let n = Int(terminal.dropFirst(3)) else { return false }
        return n >= 1 && n <= 63
    }

    private enum Own {
        case session(String, source: String)
        case userManager(UInt32)
        case none(String?)
    }

    /// The cgroup first (what `sd_pid_get_session` reads), then the audit session id
    /// (logind names a session after it when the login has one).
    private func ownSession() -> Own {
        switch logind.ownPlace() {
        case let .session(id): return .session(id, source: "cgroup")
        case let .userManager(uid): return .userManager(uid)
        case let .other(unit):
            if let id = session.auditSessionID(), logind.session(String(id)) != nil {
                return .session(String(id), source: "audit session id")
            }
            return .none(unit)
        }
    }

    private func unlessRemoteIsLive(uids: Set<UInt32>, name: (UInt32) -> String, here: String) -> String? {
        var live = LiveRemoteSessions(records: session, logind: mode == .logind ? logind : nil)
        live.procDirectory = procDirectory
        switch live.find(uids: uids) {
        case .none:
            trace(
                "local seat: \(here); no remote session of \(uids.sorted().map(name).joined(separator: ", ")) is live")
            return nil
        case let .live(uid, what):
            return "remote session of \(name(uid)) live (\(what)); this one (\(here)) not positively local"
        case let .unknown(why):
            return "cannot tell whether a remote session is live (\(why)); this one (\(here)) not positively local"
        }
    }
}

/// One logind session as the watcher reads it (org.freedesktop.login1: `ListSessions`, then
/// the session's properties).
package struct SeatSession: Equatable, Sendable {
    package var user: String
    package var uid: UInt32
    /// The seat's id; empty for a session on no seat (ssh, cron).
    package var seat: String
    package var active: Bool
    package var remote: Bool
    /// `user`, `greeter`, `lock-screen`, `background`, …
    package var sessionClass: String
    /// logind's `LockedHint`: the screen locker says the session is locked.
    package var locked: Bool

    package init(
        user: String, uid: UInt32, seat: String, active: Bool, remote: Bool, sessionClass: String, locked: Bool
    ) {
        self.user = user
        self.uid = uid
        self.seat = seat
        self.active = active
        self.remote = remote
        self.sessionClass = sessionClass
        self.locked = locked
    }

    /// A person sits at this session now: active, local (on a seat, not remote), a user's
    /// session, not locked.
    package var isPresent: Bool {
        active && !remote && !seat.isEmpty && sessionClass == "user" && !locked
    }
}

/// Whose approvals the watcher watches: a user with a session a person sits at now
/// (`SeatSession.isPresent`) and a device key on this workstation. Locked, remote-only or
/// inactive sessions give no watch: a request would be shown to nobody, or to whoever sits
/// at an unlocked screen of another's.
package enum WatchEligibility {
    /// The users to watch, with the uid of their session (for the notification), by name.
    package static func watched(sessions: [SeatSession], keyed: Set<String>) -> [String: UInt32] {
        var out: [String: UInt32] = [:]
        for session in sessions where session.isPresent && keyed.contains(session.user) {
            out[session.user] = session.uid
        }
        return out
    }
}

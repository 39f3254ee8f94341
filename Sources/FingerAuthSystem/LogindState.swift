import CSystem
import FingerAuthCore

/// One logind session as logind records it in `/run/systemd/sessions/<id>` (the files
/// sd-login reads; the module links no libsystemd, so it reads them the same way).
package struct LogindSession: Equatable, Sendable {
    package var id: String
    package var uid: UInt32?
    /// `SEAT=`: empty or absent for sessions on no seat (ssh, cron with pam_systemd).
    package var seat: String?
    /// `ACTIVE=1`: the session in front on its seat.
    package var active: Bool
    /// `REMOTE=1`: logind was told the session came from elsewhere (PAM_RHOST).
    package var remote: Bool
    /// `STATE=`: `active`, `online` or `closing` (the login ended, processes remain).
    package var state: String?
    /// `TYPE=`: tty, x11, wayland, mir, unspecified.
    package var type: String?
    /// `TTY=`: the session's own terminal (`tty2`, or `/dev/tty2`), when it has one.
    package var tty: String?
    package var remoteHost: String?

    /// Whether `terminal` (`tty2`, `pts/3`) is this session's own terminal.
    package func isOwnTerminal(_ terminal: String) -> Bool {
        guard let tty, !tty.isEmpty else { return false }
        return tty == terminal || tty == "/dev/" + terminal
    }
}

/// Where the calling process lives, by its cgroup (what `sd_pid_get_session` reads).
package enum CGroupPlace: Equatable, Sendable {
    /// `…/session-<id>.scope`: a process of logind session `id`.
    case session(String)
    /// `…/user@<uid>.service/…`: started by that user's service manager (a user unit,
    /// `systemd-run --user`, a desktop's terminal emulator: they belong to no session).
    case userManager(UInt32)
    /// Another unit (`cron.service`, `atd.service`…), or none.
    case other(String?)
}

/// logind's state as files: whether it runs (`/run/systemd/system` exists, the test of
/// `sd_booted`), its sessions and users, and the calling process's cgroup. Paths are
/// variables so that tests can lay the files out in a folder of their own.
package struct LogindState: Sendable {
    package var systemMarker = "/run/systemd/system"
    package var sessionsDirectory = "/run/systemd/sessions"
    package var usersDirectory = "/run/systemd/users"
    package var cgroupFile = "/proc/self/cgroup"

    package init() {}

    /// True when systemd runs as PID 1 (and so logind keeps the session files).
    package var isRunning: Bool {
        var st = stat()
        return lstat(systemMarker, &st) == 0 && FileType.of(st.st_mode) == FileType.directory
    }

    /// The session `id`, or nil when logind has no such session (or its file is unsafe).
    package func session(_ id: String) -> LogindSession? {
        guard LogindState.isPlainName(id), let values = keyValues(sessionsDirectory + "/" + id) else { return nil }
        return LogindSession(
            id: id, uid: values["UID"].flatMap { UInt32($0) },
            seat: values["SEAT"].flatMap { $0.isEmpty ? nil : $0 },
            active: values["ACTIVE"] == "1", remote: values["REMOTE"] == "1",
            state: values["STATE"], type: values["TYPE"], tty: values["TTY"],
            remoteHost: values["REMOTE_HOST"])
    }

    /// The user's sessions (`SESSIONS=`) and its graphical one (`DISPLAY=`), from
    /// `/run/systemd/users/<uid>`; nil when logind knows no session of that user.
    package func user(_ uid: UInt32) -> (sessions: [String], display: String?)? {
        guard let values = keyValues(usersDirectory + "/\(uid)") else { return nil }
        let sessions = (values["SESSIONS"] ?? "").split(separator: " ").map(String.init).filter(LogindState.isPlainName)
        let display = values["DISPLAY"].flatMap { $0.isEmpty ? nil : $0 }
        return (sessions, display)
    }

    /// The calling process's place: the unit of its cgroup path as systemd reads it
    /// (`cg_path_get_unit`: leading `*.slice` components skipped, the first other
    /// component is the unit). A user can make cgroups only inside its own
    /// `user@<uid>.service`, so a `session-N.scope` of its making is never the first unit.
    package func ownPlace() -> CGroupPlace {
        guard
            let bytes = try? SafeFile.read(
                cgroupFile, rule: FileRule(owner: nil, forbiddenBits: 0, maxBytes: 16 * 1024))
        else {
            return .other(nil)
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        // systemd's own hierarchy: `name=systemd` on cgroup v1 and hybrid, `0::` on v2.
        let path =
            lines.first(where: { String($0).containsBytes(":name=systemd:") }).map {
                String($0.split(separator: ":", maxSplits: 2).last ?? "")
            }
            ?? lines.first(where: { $0.hasPrefix("0::") }).map { String($0.dropFirst(3)) }
        guard let path else { return .other(nil) }
        guard let unit = path.split(separator: "/").first(where: { !$0.hasSuffix(".slice") }) else {
            return .other(nil)
        }
        if unit.hasPrefix("session-"), unit.hasSuffix(".scope") {
            let id = String(unit.dropFirst(8).dropLast(6))
            if LogindState.isPlainName(id) { return .session(id) }
        }
        if unit.hasPrefix("user@"), unit.hasSuffix(".service"), let uid = UInt32(unit.dropFirst(5).dropLast(8)) {
            return .userManager(uid)
        }
        return .other(String(unit.prefix(64)))
    }

    /// Session ids are short names of letters and digits (logind's `session_id_valid`).
    static func isPlainName(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { byte in
                let lower = byte | 0x20
                return (byte >= 0x30 && byte <= 0x39) || (lower >= 0x61 && lower <= 0x7a)
            }
    }

    /// `KEY=value` lines of a root-owned file that others cannot write.
    private func keyValues(_ path: String) -> [String: String]? {
        guard let bytes = try? SafeFile.read(path, rule: FileRule(owner: 0, forbiddenBits: 0o022, maxBytes: 64 * 1024))
        else {
            return nil
        }
        var values: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            values[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return values
    }
}

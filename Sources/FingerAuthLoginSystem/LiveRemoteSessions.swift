import CSystem
import FingerAuthSystem

/// Whether one of some users is logged in remotely right now: from somewhere else, that
/// user can type into a terminal multiplexer, a user unit or an X display of this machine.
/// Sources the users cannot forge: a session recorded as remote by the module's `session`
/// line (`session_dir/<audit id>`) that a process still holds (its audit session id and
/// login uid in `/proc/<pid>/`, both set at login and out of the user's reach), and, where
/// logind runs, that user's logind sessions marked `REMOTE=1` that have not ended.
///
/// A process left behind by a remote login (tmux, nohup, mosh-server) keeps its session
/// live: from there the session can still be typed into.
package struct LiveRemoteSessions {
    package var procDirectory = "/proc"
    /// The module's records (`session_dir`), read with `RemoteSession`'s rule.
    package var records: RemoteSession
    /// logind's sessions too, when it runs.
    package var logind: LogindState?
    /// More processes than this and the answer is `unknown` (never "none").
    package var maxProcesses = 100_000

    package init(records: RemoteSession, logind: LogindState?) {
        self.records = records
        self.logind = logind
    }

    package enum Answer: Equatable, Sendable {
        case none
        /// A live remote session of `uid`: what it is ("audit session 12 from 192.0.2.7").
        case live(uid: UInt32, what: String)
        /// The question could not be answered (a login must then be treated as not local).
        case unknown(String)
    }

    /// The first live remote session of one of `uids`.
    package func find(uids: Set<UInt32>) -> Answer {
        if let logind {
            for uid in uids.sorted() {
                guard let user = logind.user(uid) else { continue }
                for id in user.sessions {
                    guard let session = logind.session(id), session.remote, session.state != "closing" else { continue }
                    return .live(
                        uid: uid, what: "logind session \(id) from \(session.remoteHost.map(printable) ?? "elsewhere")")
                }
            }
        }
        return scanRecords(uids: uids)
    }

    /// Every process's audit session id, looked up in the records (each id once).
    private func scanRecords(uids: Set<UInt32>) -> Answer {
        guard hasEntries(records.recordDirectory) else { return .none }
        guard let dir = opendir(procDirectory) else { return .unknown("cannot list \(procDirectory)") }
        defer { closedir(dir) }
        var decided = Set<UInt32>()
        var processes = 0
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { continue }
            processes += 1
            guard processes <= maxProcesses else { return .unknown("more than \(maxProcesses) processes to look at") }
            let base = procDirectory + "/" + name
            guard let id = readNumber(base + "/sessionid"), id != UInt32.max, !decided.contains(id) else { continue }
            guard let host = records.readRecord(id) else {
                decided.insert(id)
                continue
            }
            // The process may have ended in between: another of its session will say.
            guard let uid = readNumber(base + "/loginuid") else { continue }
            decided.insert(id)
            if uids.contains(uid) { return .live(uid: uid, what: "audit session \(id) from \(host)") }
        }
        return .none
    }

    /// True when `directory` holds at least one entry (without listing all of them).
    private func hasEntries(_ directory: String) -> Bool {
        guard let dir = opendir(directory) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let first = entry.pointee.d_name.0
            if first != 0x2e { return true } // ".", ".." and hidden temporary files
        }
        return false
    }

    /// A small decimal file of /proc (`sessionid`, `loginuid`).
    private func readNumber(_ path: String) -> UInt32? {
        let fd = fa_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return UInt32(String(decoding: buffer[0..<n], as: UTF8.self).trimmingNewline())
    }

    private func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(64))
    }
}

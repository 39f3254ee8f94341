import CSystem

/// Whether the process runs in a remote session, from facts the caller cannot change
/// (docs/ARCHITECTURE.md, "Remote sessions"): the audit session id (`/proc/self/sessionid`, assigned by
/// pam_loginuid at login and inherited; only root can start a new one) looked up in the
/// module's own records (`pam_sm_open_session` in sshd's stack writes one per remote
/// session) and in logind's (`/run/systemd/sessions/<id>`, `REMOTE=1`), and the utmp entry
/// of the session's terminal (sshd records the client's address as its host). Each fact
/// can only add "remote"; none can take it away.
package struct RemoteSession {
    package var sessionIDFile = "/proc/self/sessionid"
    package var statFile = "/proc/self/stat"
    package var logindDirectory = "/run/systemd/sessions"
    package var utmpFile = "/run/utmp"
    /// Where the module records remote sessions (`session_dir`).
    package var recordDirectory: String
    /// Where a fact could not be read, and why (the module's debug log).
    package var trace: (String) -> Void = { _ in }

    /// utmp as the system keeps it: root-owned and not writable by others. Debian's is
    /// `root:utmp 0664` (the group lets utempter and login record entries), so group
    /// write is allowed; a user-owned or world-writable file is not believed.
    package static let utmpRule = FileRule(owner: 0, forbiddenBits: 0o002, maxBytes: 4 * 1024 * 1024)

    package init(recordDirectory: String) { self.recordDirectory = recordDirectory }

    /// The audit session id, or nil when none was assigned (4294967295).
    package func auditSessionID() -> UInt32? {
        guard let text = readSmall(sessionIDFile), let id = UInt32(text.trimmingNewline()), id != UInt32.max else {
            return nil
        }
        return id
    }

    /// The login uid pam_loginuid gave this session (`/proc/self/loginuid`), or nil when unset.
    package func loginUID() -> UInt32? {
        let path = SafeFile.directoryName(of: sessionIDFile) + "/loginuid"
        guard let text = readSmall(path), let uid = UInt32(text.trimmingNewline()), uid != UInt32.max else {
            return nil
        }
        return uid
    }

    /// Why this session is remote, or nil. `tty` is `PAM_TTY` when the application set it.
    package func remoteReason(tty: String?) -> String? {
        if let id = auditSessionID() {
            if let record = readRecord(id) { return "audit session \(id) recorded as remote (\(record))" }
            if let logind = readSmall(logindDirectory + "/\(id)"),
                logind.split(separator: "\n").contains("REMOTE=1")
            {
                return "logind session \(id) is remote"
            }
        }
        var lines: [String] = []
        if let tty { lines.append(tty.hasPrefix("/dev/") ? String(tty.dropFirst(5)) : tty) }
        if let controlling = controllingTerminal() { lines.append(controlling) }
        for line in lines where !line.isEmpty {
            if let host = utmpHost(line: line) { return "utmp: \(line) from \(host)" }
        }
        return nil
    }

    /// Records the current audit session as remote (from `pam_sm_open_session`). The file
    /// stays until reboot (`/run`): a process left behind in the session after logout
    /// (tmux, nohup) keeps the session id, and must stay remote.
    package func record(host: String) -> Result<UInt32, SpawnFailure> {
        guard let id = auditSessionID() else {
            return .failure(SpawnFailure("no audit session id (pam_loginuid not in the stack?)"))
        }
        do {
            try makeDirectories(recordDirectory)
            let text = host.utf8.prefix(255).map { $0 >= 0x20 && $0 < 0x7f ? $0 : UInt8(ascii: "?") }
            try SafeFile.writeAtomically(recordDirectory + "/\(id)", Array(text) + [10], mode: 0o644)
        } catch {
            return .failure(SpawnFailure(error.description))
        }
        return .success(id)
    }

    /// The client's address recorded for audit session `id`, or nil when there is no
    /// record (or one that others could have written).
    package func readRecord(_ id: UInt32) -> String? {
        guard let bytes = try? SafeFile.read(recordDirectory + "/\(id)", rule: .config) else { return nil }
        let text = String(decoding: bytes.prefix(255), as: UTF8.self).trimmingNewline()
        return text.isEmpty ? "remote" : text
    }

    /// Creates `path` and its missing parents, root 0755.
    private func makeDirectories(_ path: String) throws(SafeFileError) {
        var walked = ""
        for part in path.split(separator: "/") {
            walked += "/" + part
            if !SafeFile.exists(walked) { try SafeFile.makeDirectory(walked, mode: 0o755) }
        }
        try SafeFile.checkDirectory(path, rule: .config)
    }

    /// The controlling terminal's name (`pts/3`, `tty2`) from field 7 of `/proc/self/stat`;
    /// only pseudo-terminals and virtual consoles are named.
    package func controllingTerminal() -> String? {
        guard let stat = readSmall(statFile), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state(0) ppid(1) pgrp(2) session(3) tty_nr(4)
        guard fields.count > 4, let device = Int64(fields[4]), device > 0 else { return nil }
        let major = (device >> 8) & 0xfff
        let minor = (device & 0xff) | ((device >> 12) & 0xfff00)
        if major >= 136 && major <= 143 { return "pts/\((major - 136) * 256 + minor)" }
        if major == 4 && minor < 64 { return "tty\(minor)" }
        return nil
    }

    /// The remote host of the live login on `line`, if utmp names one (an X display such as
    /// `:0` is local).
    func utmpHost(line: String) -> String? {
        let bytes: [UInt8]
        do {
            bytes = try SafeFile.read(utmpFile, rule: RemoteSession.utmpRule)
        } catch {
            if case .missing = error {
                trace("utmp: \(utmpFile) does not exist")
            } else {
                trace("utmp skipped: \(error)")
            }
            return nil
        }
        let size = MemoryLayout<utmp>.size
        var offset = 0
        while offset + size <= bytes.count {
            let entry = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: utmp.self) }
            offset += size
            guard entry.ut_type == USER_PROCESS else { continue }
            let entryLine = withUnsafeBytes(of: entry.ut_line) { cString($0) }
            guard entryLine == line else { continue }
            let host = withUnsafeBytes(of: entry.ut_host) { cString($0) }
            if !host.isEmpty && !host.hasPrefix(":") { return host }
        }
        return nil
    }

    private func cString(_ raw: UnsafeRawBufferPointer) -> String {
        let bytes = raw.prefix(while: { $0 != 0 }).map { $0 >= 0x20 && $0 < 0x7f ? $0 : UInt8(ascii: "?") }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func readSmall(_ path: String) -> String? {
        guard let bytes = try? SafeFile.read(path, rule: FileRule(owner: nil, forbiddenBits: 0, maxBytes: 4096)) else {
            return nil
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    package func trimmingNewline() -> String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == " " { s = s.dropLast() }
        return String(s)
    }
}

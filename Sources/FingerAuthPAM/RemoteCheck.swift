import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthLoginSystem
import FingerAuthSystem

/// Why this login comes from a remote session, or is not positively local, or nil
/// (docs/ARCHITECTURE.md, "Remote sessions"). Facts the caller cannot forge decide:
/// `PAM_RHOST`, the audit session's record (ours or logind's), the terminal's utmp entry,
/// then the local-seat rule (`LocalSeat`). The SSH variables of the environment can only
/// add "remote": whoever wants the local reader armed from an ssh session simply unsets them.
/// The facts are the host's: its `/proc` entries (controlling terminal, audit session, login
/// uid, cgroup: fingerauth-pam has a session of its own), its real and effective uid from the
/// module's request.
func remoteReason(
    _ handle: ModuleHandle, caller: ModuleRequest, options: Options, user: String, users: ModuleUserDatabase,
    trace: @escaping (String) -> Void
) -> String? {
    if let host = handle.stringItem(.remoteHost), !host.isEmpty { return "PAM_RHOST \(printable(host))" }
    var session = hostSession(caller, options)
    session.trace = trace
    if let why = session.remoteReason(tty: handle.stringItem(.tty)) { return why }
    if handle.inSSHSession() { return "SSH variables in the environment" }
    var seat = LocalSeat(session: session)
    seat.logind.cgroupFile = "/proc/\(caller.hostPID)/cgroup"
    seat.trace = trace
    // Whose live remote session makes a terminal here doubtful: the user logging in, the
    // caller of a setuid host (its real uid; a root host such as a display manager has no
    // caller of its own) and the login uid of the session it runs in.
    var uids: Set<UInt32> = caller.realUID != caller.effectiveUID ? [caller.realUID] : []
    if let uid = users.uid(of: user) { uids.insert(uid) }
    if let loginUID = session.loginUID() { uids.insert(loginUID) }
    return seat.notLocalReason(uids: uids, name: { users.name(of: $0) ?? "uid \($0)" })
}

/// Where a remote login comes from, as a remote approval names it to the person: the client's
/// address (`PAM_RHOST`, else the remote session's record of the host's audit session), the
/// login's terminal (`PAM_TTY` without `/dev/`) and who asks when that is not the user
/// (`approvalCaller`). Words the authenticator takes, or empty.
func remoteOrigin(
    _ handle: ModuleHandle, caller: ModuleRequest, options: Options, user: String, users: ModuleUserDatabase
) -> ApprovalAsk {
    var address = handle.stringItem(.remoteHost) ?? ""
    if address.isEmpty {
        let session = hostSession(caller, options)
        address = session.auditSessionID().flatMap { session.readRecord($0) } ?? ""
    }
    var terminal = handle.stringItem(.tty) ?? ""
    if terminal.hasPrefix("/dev/") { terminal = String(terminal.dropFirst(5)) }
    func word(_ text: String, _ limit: Int) -> String { ApprovalAsk.isWord(text, limit: limit) ? text : "" }
    return ApprovalAsk(
        clientAddress: word(address, 255), terminal: word(terminal, 64),
        caller: approvalCaller(handle, caller: caller, user: user, users: users))
}

/// Who asks for `user`'s login, when that is someone else; empty when it is the user or
/// nobody says. A setuid host's real uid decides (the kernel's fact: alice's `su bob` is
/// asked by alice, whatever `PAM_RUSER` says); a host running as root (sshd, login) is
/// believed about its `PAM_RUSER`. A name that is no word, or a uid without a name, is
/// shown as `#uid` or `unknown`.
func approvalCaller(_ handle: ModuleHandle, caller: ModuleRequest, user: String, users: ModuleUserDatabase) -> String {
    let name: String
    if caller.realUID != caller.effectiveUID {
        guard let known = users.name(of: caller.realUID), ApprovalAsk.isWord(known, limit: 64) else {
            return "#\(caller.realUID)"
        }
        name = known
    } else {
        name = handle.stringItem(.remoteUser) ?? ""
        if name.isEmpty { return "" }
        guard ApprovalAsk.isWord(name, limit: 64) else { return "unknown" }
    }
    return sameBytes(name, user) ? "" : name
}

/// `pam_sm_open_session`: in sshd's stack (after pam_loginuid, which starts the audit
/// session), a session with `PAM_RHOST` is recorded as remote under `session_dir`, keyed by
/// its audit session id, so that a `sudo` run inside it later is known to be remote whatever
/// its environment says. Never fails the session: `PAM_IGNORE` when there is nothing to do.
func openSession(_ handle: ModuleHandle, _ request: ModuleRequest) -> PAMCode {
    guard let host = handle.stringItem(.remoteHost), !host.isEmpty else { return .ignore }
    guard
        let options = try? OptionsLoader.load(
            arguments: request.arguments, requireURL: false, readFile: ConfigurationFile.read)
    else {
        handle.syslog(LOG_ERR, "session: configuration error; remote session not recorded")
        return .ignore
    }
    switch hostSession(request, options).record(host: host) {
    case let .success(id):
        handle.syslog(LOG_INFO, "session: audit session \(id) recorded as remote (\(printable(host)))")
        return .success
    case let .failure(why):
        handle.syslog(LOG_NOTICE, "session: remote session not recorded: \(why)")
        return .ignore
    }
}

/// The remote-session facts of the host process (fingerauth-pam's parent, checked at the start).
private func hostSession(_ request: ModuleRequest, _ options: Options) -> RemoteSession {
    var session = RemoteSession(recordDirectory: options.sessionDirectory)
    session.sessionIDFile = "/proc/\(request.hostPID)/sessionid"
    session.statFile = "/proc/\(request.hostPID)/stat"
    return session
}

private func printable(_ text: String) -> String {
    String(String(text.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(64))
}

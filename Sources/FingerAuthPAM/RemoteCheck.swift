import CPAM
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
func remoteReason(_ handle: PAMHandle, options: Options, user: String, trace: @escaping (String) -> Void) -> String? {
    if let host = handle.stringItem(PAM_RHOST), !host.isEmpty { return "PAM_RHOST \(printable(host))" }
    var session = RemoteSession(recordDirectory: options.sessionDirectory)
    session.trace = trace
    if let why = session.remoteReason(tty: handle.stringItem(PAM_TTY)) { return why }
    if handle.inSSHSession() { return "SSH variables in the environment" }
    var seat = LocalSeat(session: session)
    seat.trace = trace
    // Whose live remote session makes a terminal here doubtful: the user logging in, the
    // caller of a setuid host (its real uid; a root host such as a display manager has no
    // caller of its own) and the login uid of the session it runs in.
    var uids: Set<UInt32> = getuid() != geteuid() ? [getuid()] : []
    let users = SystemUserDatabase()
    if let uid = users.uid(of: user) { uids.insert(uid) }
    if let loginUID = session.loginUID() { uids.insert(loginUID) }
    return seat.notLocalReason(uids: uids, name: { users.name(of: $0) ?? "uid \($0)" })
}

/// `session` lines: in sshd's stack (after pam_loginuid, which starts the audit session),
/// a session with `PAM_RHOST` is recorded as remote under `session_dir`, keyed by its
/// audit session id, so that a `sudo` run inside it later is known to be remote whatever
/// its environment says. Never fails the session: `PAM_IGNORE` when there is nothing to do.
@_cdecl("pam_sm_open_session")
public func pam_sm_open_session(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guard let pamh else { return PAMCode.ignore.rawValue }
    let handle = PAMHandle(raw: pamh)
    guard let host = handle.stringItem(PAM_RHOST), !host.isEmpty else { return PAMCode.ignore.rawValue }
    guard let arguments = moduleArguments(argc, argv),
        let options = try? OptionsLoader.load(arguments: arguments, requireURL: false, readFile: ConfigurationFile.read)
    else {
        handle.syslog(LOG_ERR, "session: configuration error; remote session not recorded")
        return PAMCode.ignore.rawValue
    }
    switch RemoteSession(recordDirectory: options.sessionDirectory).record(host: host) {
    case let .success(id):
        handle.syslog(LOG_INFO, "session: audit session \(id) recorded as remote (\(printable(host)))")
        return PAMCode.success.rawValue
    case let .failure(why):
        handle.syslog(LOG_NOTICE, "session: remote session not recorded: \(why)")
        return PAMCode.ignore.rawValue
    }
}

/// The record outlives the session on purpose (see `RemoteSession.record`).
@_cdecl("pam_sm_close_session")
public func pam_sm_close_session(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    PAMCode.ignore.rawValue
}

private func printable(_ text: String) -> String {
    String(String(text.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7f ? Character($0) : "?" }).prefix(64))
}

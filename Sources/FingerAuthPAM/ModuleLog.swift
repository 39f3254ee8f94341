import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// The module's log, written for it. One line per attempt through pam_syslog in the host
/// (LOG_AUTHPRIV), always.
/// Step lines with `debug`: to syslog, or with `debug_file=` to that file instead (root,
/// 0600, appended; the attempt's line is appended there too). Lines carry names, codes
/// and ids; never a key, a token or a JWT.
struct ModuleLog {
    let handle: ModuleHandle
    let debug: Bool
    let debugFile: String?

    func step(_ text: String) {
        if debugFile != nil {
            append("debug: " + text)
        } else if debug {
            handle.syslog(LOG_DEBUG, "debug: " + text)
        }
    }

    func outcome(_ outcome: LoginOutcome, user: String?, service: String, milliseconds: Int64) {
        var line = "service=\(service)"
        // A name that failed validation may be a password typed at the user prompt.
        if let user, outcome.code != .userUnknown { line += " user=\(user)" }
        line += " result=\(outcome.code) reason=\"\(outcome.reason)\""
        if let finger = outcome.finger { line += " finger=\(finger)" }
        if let kid = outcome.kid { line += " kid=\(kid)" }
        if let jti = outcome.jti { line += " jti=\(jti)" }
        line += " ms=\(milliseconds)" + (outcome.stages?.logFields ?? "")
        handle.syslog(outcome.code == .success ? LOG_INFO : LOG_NOTICE, line)
        append(line)
    }

    private func append(_ line: String) {
        guard let debugFile else { return }
        let fd = fa_open(debugFile, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, FileType.of(st.st_mode) == FileType.regular, st.st_uid == 0 else { return }
        let bytes = Array(("pam_fingerauth: " + line + "\n").utf8)
        // A line past the caller's RLIMIT_FSIZE would raise SIGXFSZ and end the host.
        let (end, overflow) = Int(st.st_size).addingReportingOverflow(bytes.count)
        guard !overflow, FileSizeLimit.permits(size: end) else { return }
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

import CPAM
import CSystem
import FingerAuthLoginDomain
import FingerAuthSystem

/// libpam's entry point for `auth` lines (docs/ARCHITECTURE.md, "The module and
/// fingerauth-pam"). The module keeps no state between calls and decides nothing itself:
/// it starts fingerauth-pam, clean, and answers its questions about this PAM handle; what
/// fingerauth-pam sends as `RESULT` is returned. Every other ending is a denial.
@_cdecl("pam_sm_authenticate")
public func pam_sm_authenticate(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guard let pamh else { return PAMCode.systemError.rawValue }
    return run(.authenticate, PAMHandle(raw: pamh), flags: flags, argc, argv, failure: .authInfoUnavailable)
}

/// Nothing to set: the module grants no credentials of its own.
@_cdecl("pam_sm_setcred")
public func pam_sm_setcred(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    PAMCode.success.rawValue
}

/// `session` lines: fingerauth-pam records a session with `PAM_RHOST` as remote (see
/// `RemoteSession.record`). Never fails the session: `PAM_IGNORE` when there is nothing to do.
@_cdecl("pam_sm_open_session")
public func pam_sm_open_session(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guard let pamh else { return PAMCode.ignore.rawValue }
    let handle = PAMHandle(raw: pamh)
    // Only sshd's sessions (and other remote ones) are recorded: nothing to start otherwise.
    guard let host = handle.stringItem(PAM_RHOST), !host.isEmpty else { return PAMCode.ignore.rawValue }
    return run(.openSession, handle, flags: flags, argc, argv, failure: .ignore)
}

/// The record outlives the session on purpose (see `RemoteSession.record`).
@_cdecl("pam_sm_close_session")
public func pam_sm_close_session(
    _ pamh: OpaquePointer?, _ flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    PAMCode.ignore.rawValue
}

/// One entry point's whole run: the arguments, fingerauth-pam, its result. `failure` is the
/// code when fingerauth-pam cannot be asked or ends without a result.
private func run(
    _ entry: ModuleEntryPoint, _ handle: PAMHandle, flags: Int32, _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?, failure: PAMCode
) -> Int32 {
    let started = MonotonicInstant.now().milliseconds
    guard let arguments = moduleArguments(argc, argv) else {
        if entry == .openSession {
            handle.syslog(LOG_ERR, "session: configuration error; remote session not recorded")
            return failure.rawValue
        }
        handle.syslog(
            LOG_ERR,
            "configuration error, fingerprint login disabled: more than \(maxArguments) pam.d arguments, or one longer than \(maxArgumentBytes) bytes"
        )
        return PAMCode.serviceError.rawValue
    }
    let request = ModuleRequest(
        entry: entry, flags: flags, realUID: getuid(), effectiveUID: geteuid(), hostPID: getpid(),
        started: started, arguments: arguments)
    return ModuleBridge(handle: handle).run(request, failure: failure).rawValue
}

package let maxArguments = 64
package let maxArgumentBytes = 4096

/// The pam.d arguments as Swift strings; nil when there are more than 64 of them or one is
/// longer than 4 KiB (dropping one silently could drop, say, `pinned_pubkey=`).
package func moduleArguments(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String]? {
    guard let argv, argc > 0 else { return [] }
    guard argc <= maxArguments else { return nil }
    var out: [String] = []
    for i in 0..<Int(argc) {
        guard let p = argv[i] else { continue }
        let length = fa_strnlen(p, maxArgumentBytes + 1)
        guard length <= maxArgumentBytes else { return nil }
        out.append(
            p.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            })
    }
    return out
}

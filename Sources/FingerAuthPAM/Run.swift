import CSystem
import FingerAuthLoginDomain

/// The whole run: the request, the entry point, the result, the exit. The environment is
/// emptied first, as the login helper does: nothing from whoever started this process may
/// change what it or libc does.
func runFingerAuthPAM() -> Never {
    clearenv()
    _ = fa_set_not_dumpable()
    fa_closefrom(3)
    fa_ignore_sigpipe()
    umask(0o077)
    let channel = ModuleChannel()
    // The host's /proc entries are the login's facts: it must be the process that started
    // this one, still (not a module's request replayed by another program, nor a parent gone).
    guard let request = channel.readRequest(), request.hostPID == getppid() else { _exit(2) }
    let handle = ModuleHandle(channel: channel)
    switch request.entry {
    case .authenticate: channel.finish(authenticate(handle, request))
    case .openSession: channel.finish(openSession(handle, request))
    }
    // _exit: every line went out with write(2); the module waits for this exit.
    _exit(0)
}

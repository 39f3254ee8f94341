import CSystem
import FingerAuthLoginDomain

#if canImport(Glibc)
import Glibc
#endif

// fingerauth-pam: the module's decisions, made outside the PAM host
// (docs/ARCHITECTURE.md, "The module and fingerauth-pam"). pam_fingerauth.so starts it
// for each call, clean, with the host's credentials (root as every uid when the host's
// effective uid is 0), and answers its `ModuleCall`s; this process reads the
// configuration, tells a remote session, keeps the attempts and runs the login (the login
// helper started from here, or fingerauth-agent for a host that runs as the user).
//
// The environment is emptied first, as the login helper does: nothing from whoever
// started it may change what it or the libraries do.
clearenv()
_ = fa_set_not_dumpable()
fa_closefrom(3)
signal(SIGPIPE, SIG_IGN)
umask(0o077)

let channel = ModuleChannel()
// The host's /proc entries are the login's facts: it must be the process that started this
// one, still (not a module's request replayed by another program, nor a parent gone).
guard let request = channel.readRequest(), request.hostPID == getppid() else {
    _exit(2)
}
let handle = ModuleHandle(channel: channel)
switch request.entry {
case .authenticate: channel.finish(authenticate(handle, request))
case .openSession: channel.finish(openSession(handle, request))
}
// _exit: every line went out with write(2); the module waits for this exit.
_exit(0)

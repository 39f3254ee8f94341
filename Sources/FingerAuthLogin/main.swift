import CSystem

#if canImport(Glibc)
import Glibc
#endif

// fingerauth-login: the whole login step, in its own short-lived root process, so that
// libfprint, GLib and OpenSSL never run inside sudo, su or sshd. It speaks
// `HelperMessage` lines on stdout.
//
// The environment is emptied first: the module starts it with an empty one anyway, and
// when it is started any other way nothing from the caller (SSLKEYLOGFILE, OPENSSL_CONF,
// FP_VIRTUAL_DEVICE, G_DEBUG=fatal-*, proxies…) may change what the libraries do. The
// descriptor the module executed it from (3) is closed: only the pipes stay.
clearenv()
_ = fa_set_not_dumpable() // holds a key and, after a match, a token: no core file of it
fa_closefrom(3)
signal(SIGPIPE, SIG_IGN)
umask(0o077)
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments == ["--login"] {
    // _exit: every line went out with write(2) already, and the module waits for this exit
    // before it answers PAM; atexit work (TLS close_notify, GLib) only delays it.
    _exit(LoginCommand.run().rawValue)
}
if arguments == ["--verify"] {
    _exit(VerifyCommand.run().rawValue)
}
exit(ScanCommand.run(arguments).rawValue)

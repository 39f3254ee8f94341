#if canImport(Glibc)
import Glibc
#endif

// fingerauth-scan: the biometric step of a login, in its own short-lived process so that
// GLib and libfprint never run inside sudo or sshd. It speaks `ScanMessage` lines on stdout.
//
// The environment is emptied first: the module spawns it with a clean one anyway, and when
// it is started any other way nothing from the caller (FP_VIRTUAL_DEVICE, G_DEBUG=fatal-*,
// GIO_MODULE_DIR…) may choose the reader or change how GLib behaves. Only the arguments count.
clearenv()
signal(SIGPIPE, SIG_IGN)
umask(0o077)
exit(ScanCommand.run(Array(CommandLine.arguments.dropFirst())).rawValue)

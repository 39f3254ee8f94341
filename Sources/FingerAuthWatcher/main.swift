import CSystem
import FingerAuthApproval
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

// fingerauth-watcher: the workstation's side of remote approval, resident (see
// fingerauth-watcher(8) and ARCHITECTURE "The workstation's watcher").

let words = Array(CommandLine.arguments.dropFirst())
if words.first == "--notify" { exit(Notifier.run(Array(words.dropFirst()))) }
if words == ["--version"] {
    print("fingerauth-watcher \(Watcher.version)")
    exit(0)
}
if words.first == "--help" || words.first == "-h" {
    print(WatcherSettings.usage)
    exit(0)
}
guard geteuid() == 0 else {
    log("must run as root: it reads the users' device keys and arms the reader")
    exit(1)
}
fa_ignore_sigpipe()
let settings: WatcherSettings
switch WatcherSettings.load(words, executable: Watcher.ownPath()) {
case let .success(loaded): settings = loaded
case let .failure(why):
    log(why.message)
    let usage = Array((WatcherSettings.usage + "\n").utf8)
    usage.withUnsafeBytes { _ = fa_write(2, $0.baseAddress, $0.count) }
    exit(2)
}
Watcher(settings: settings).run()

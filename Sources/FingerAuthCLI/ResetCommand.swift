import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthOffline
import FingerAuthSystem
import FingerAuthTPM

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth reset`: revokes the user's key at the authenticator, then deletes prints,
/// keys and the registration. Works with a warning when the authenticator cannot be reached.
enum ResetCommand {
    static let usage = """
        usage: fingerauth reset [--user U] [--config F] [--state-dir D]
          Revokes the user's key at the authenticator, then deletes the user's prints, device key
          and registration. When the authenticator cannot be reached (or refuses), the local state
          is deleted anyway and a warning says which kid to revoke there. Needs root.
          Exit status: 0 reset (warnings on stderr), 1 failed, 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions)
        try Context.requireRoot("reset")
        let context = try Context(args, requireURL: false)
        let paths = context.paths
        var kids: [String] = []
        var keys: [String: DeviceKey] = [:]
        for path in [paths.deviceKey, KeyRotation.oldPath(paths)] {
            if case let .success(key) = DeviceKeyLoader(tcti: context.options.tpmTCTI).load(path) {
                kids.append(key.kid)
                keys[key.kid] = key
            } else if let described = DeviceKeyLoader.describe(path) {
                kids.append(described.kid)
            }
        }
        if let record = try? Registration.load(paths.registration) {
            if record.status == "revoked" {
                kids.removeAll { $0 == record.kid }
            } else if !kids.contains(record.kid) {
                kids.append(record.kid)
            }
        }
        // Offline logins not yet uploaded go to the authenticator first (best effort): their
        // records are deleted below with the rest.
        let book = OfflineBook(
            stateDirectory: context.options.stateDirectory, user: context.user,
            host: Authenticator(options: context.options).hostID)
        if !book.unsent().isEmpty && !SyncCommand.upload([book], options: context.options) {
            say("warning: \(book.unsent().count) offline login(s) of \(context.user) could not be uploaded; deleted")
        }
        for kid in kids { revoke(kid, holder: keys[kid], context) }

        var removed = 0
        let prints = SafeFile.list(paths.printsDirectory)
        SensorPrints.delete(
            context,
            fingers: prints.filter { $0.hasSuffix(StatePaths.printSuffix) }
                .map { String($0.dropLast(StatePaths.printSuffix.count)) })
        let files =
            prints.map { paths.printsDirectory + "/" + $0 }
            + [paths.deviceKey, paths.deviceKey + ".new", KeyRotation.oldPath(paths), paths.registration]
            + [paths.offlineGrant, paths.offlineLog, paths.offlineSent]
        for file in files where SafeFile.exists(file) {
            do { try SafeFile.remove(file) } catch { throw CommandError("cannot delete: \(error)") }
            removed += 1
        }
        for directory in [paths.printsDirectory, paths.userDirectory] where SafeFile.exists(directory) {
            if rmdir(directory) != 0 {
                throw CommandError(
                    "cannot remove \(directory): \(String(cString: strerror(errno))) (remove what is left by hand)")
            }
        }
        let fingers = prints.filter { $0.hasSuffix(StatePaths.printSuffix) }.count
        say(
            removed == 0
                ? "\(context.user) had nothing enrolled on this host"
                : "deleted \(fingers) print(s), the device key and the registration of \(context.user)")
        return 0
    }

    private static func revoke(_ kid: String, holder: DeviceKey?, _ context: Context) {
        guard context.options.url != nil else {
            printError(
                "fingerauth: warning: no url configured, key \(kid) was not revoked at the authenticator; revoke it there: fingerauthd keys revoke --kid \(kid)"
            )
            return
        }
        do {
            switch try Authenticator(options: context.options).revoke(kid: kid, holder: holder, user: context.user) {
            case .revoked: say("revoked key \(kid) at the authenticator")
            case .unknown: say("key \(kid) was not registered at the authenticator")
            }
        } catch {
            let why = error.unreachable ? "the authenticator is unreachable" : "the authenticator did not revoke it"
            printError("fingerauth: warning: \(why): \(error.message)")
            printError(
                "fingerauth: warning: key \(kid) may still be active; revoke it there: fingerauthd keys revoke --kid \(kid)"
            )
        }
    }
}

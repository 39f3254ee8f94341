import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth key rotate`, in an order that never leaves the user without a registered key:
/// new key beside the old one (`device.key.new`), register it, swap it in (the old one
/// becomes `device.key.old`), revoke the old one at the authenticator, and only then delete it.
struct KeyRotation {
    let context: Context
    let store: KeyStores.Store
    let bits: Int

    /// `…/device.key.new`: the new key until it is registered.
    var newPath: String { context.paths.deviceKey + ".new" }
    /// `…/device.key.old`: the old key until the authenticator has revoked it.
    static func oldPath(_ paths: StatePaths) -> String { paths.deviceKey + ".old" }

    func run() throws(CommandError) -> Int32 {
        // A TPM key that its TPM no longer holds (cleared, replaced) cannot sign, but it can
        // still be named: it is replaced, and revoked with the host token.
        let holder: DeviceKey?
        let oldKid: String
        do {
            let loaded = try context.loadDeviceKey()
            holder = loaded
            oldKid = loaded.kid
        } catch {
            guard let described = DeviceKeyLoader.describe(context.paths.deviceKey), described.store == "tpm" else {
                throw error
            }
            say("the old TPM key \(described.kid) cannot be used (\(error.message)); replacing it")
            holder = nil
            oldKid = described.kid
        }
        let fresh = try KeyStores.generate(store, bits: bits, to: newPath, options: context.options)
        say("created new key \(fresh.kid) (\(KeyStores.describe(fresh)))")
        let status: String
        do {
            status = try RegisterCommand.register(fresh, context: context)
        } catch {
            try? SafeFile.remove(newPath)
            throw CommandError("\(error.message); the old key \(oldKid) stays in use, nothing changed")
        }
        say("registered new key \(fresh.kid): \(status)")
        RegisterCommand.pendingHint(status, kid: fresh.kid)
        let oldPath = KeyRotation.oldPath(context.paths)
        guard rename(context.paths.deviceKey, oldPath) == 0, rename(newPath, context.paths.deviceKey) == 0 else {
            let reason = String(cString: strerror(errno))
            throw CommandError("cannot put the new key in place (\(reason)); see \(newPath) and \(oldPath)")
        }
        say("new key \(fresh.kid) is now in use for \(context.user)")
        do {
            let result = try Authenticator(options: context.options).revoke(
                kid: oldKid, holder: holder, user: context.user)
            say(
                result == .revoked
                    ? "revoked old key \(oldKid) at the authenticator"
                    : "old key \(oldKid) was not registered at the authenticator")
        } catch {
            printError("fingerauth: the old key \(oldKid) is still active at the authenticator: \(error.message)")
            printError(
                "fingerauth: it is kept in \(oldPath); revoke it later: fingerauth revoke --user \(context.user) --kid \(oldKid)"
            )
            return 1
        }
        do {
            try SafeFile.remove(oldPath)
        } catch {
            throw CommandError("old key revoked, but cannot delete \(oldPath): \(error)")
        }
        say("deleted old key \(oldKid)")
        return 0
    }
}

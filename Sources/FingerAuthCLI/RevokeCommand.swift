import FingerAuthCore
import FingerAuthCrypto
import FingerAuthSystem
import FingerAuthTPM

/// `fingerauth revoke`: revokes a key at the authenticator (`DELETE /v1/keys/<kid>` with
/// this host's enrollment token). The key file stays; the registration record says revoked.
enum RevokeCommand {
    static let usage = """
        usage: fingerauth revoke [--user U] [--kid KID] [--config F] [--state-dir D]
          Revokes the user's device key (or KID, e.g. an old key a rotation could not revoke)
          at the authenticator with this host's enrollment token. Fingerprint login stops for
          that key at once; make a new one with: fingerauth key rotate. Needs root.
          Exit status: 0 revoked (or unknown to the authenticator), 1 failed, 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions.union(["kid"]))
        try Context.requireRoot("revoke")
        let context = try Context(args, requireURL: true)
        let kid = try args["kid"] ?? currentKid(context)
        let holder = try? context.loadDeviceKey()
        let result = try Authenticator(options: context.options).revoke(kid: kid, holder: holder, user: context.user)
        switch result {
        case .revoked: say("revoked key \(kid) for \(context.user) at the authenticator")
        case .unknown: say("key \(kid) is not registered at the authenticator; nothing to revoke there")
        }
        try forget(kid: kid, context: context)
        if args["kid"] == nil || DeviceKeyLoader.describe(context.paths.deviceKey)?.kid == kid {
            say(
                "fingerprint login for \(context.user) is off until a new key is registered: fingerauth key rotate --user \(context.user)"
            )
        }
        return 0
    }

    /// The kid of the user's device key, else of the registration record.
    static func currentKid(_ context: Context) throws(CommandError) -> String {
        if SafeFile.exists(context.paths.deviceKey) {
            // A TPM key its TPM no longer holds is still named by its file's public part.
            if let described = DeviceKeyLoader.describe(context.paths.deviceKey) { return described.kid }
            return try context.loadDeviceKey().kid
        }
        if let record = try? Registration.load(context.paths.registration) { return record.kid }
        throw CommandError(
            "\(context.user) has no device key and no registration; nothing to revoke (or give --kid KID)")
    }

    /// Marks the registration revoked and deletes a leftover old key with that kid.
    static func forget(kid: String, context: Context) throws(CommandError) {
        let paths = context.paths
        if var record = try? Registration.load(paths.registration), record.kid == kid {
            record.status = "revoked"
            record.time = SystemClock().now()
            do { try record.save(paths.registration) } catch {
                throw CommandError("revoked, but cannot record it: \(error)")
            }
        }
        let old = KeyRotation.oldPath(paths)
        if DeviceKeyLoader.describe(old)?.kid == kid {
            try? SafeFile.remove(old)
            say("deleted old key \(kid)")
        }
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthSystem

/// `fingerauth key create|show`: the user's device key (RSA, PKCS#8 PEM, root 0600).
enum KeyCommands {
    static let usage = """
        usage: fingerauth key create [--user U] [--bits 3072|2048] [--force] [--config F] [--state-dir D]
               fingerauth key show [--user U] [--json] [--config F] [--state-dir D]
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first else { throw UsageError("key needs create or show") }
        let rest = Array(words.dropFirst())
        switch sub {
        case "create":
            let args = try Arguments(rest, options: Context.commonOptions.union(["bits"]), flags: ["force"])
            try Context.requireRoot("key create")
            let context = try Context(args, requireURL: false)
            let bits = Int(args["bits"] ?? "3072") ?? 0
            guard bits == 2048 || bits == 3072 else { throw UsageError("--bits must be 3072 or 2048") }
            let key = try createKey(context, bits: bits, replace: args.has("force"))
            say("created device key for \(context.user): kid \(key.kid) (RSA-\(bits))")
            say("register it with: fingerauth register --user \(context.user)")
            return 0
        case "show":
            let args = try Arguments(rest, options: Context.commonOptions, flags: ["json"])
            try Context.requireRoot("key show")
            let context = try Context(args, requireURL: false)
            let key = try context.loadDeviceKey()
            if args.has("json") {
                say(JSONEncoding.encode(.object([("user", .string(context.user)), ("kid", .string(key.kid)),
                                                 ("bits", .integer(Int64(key.jwk.bits))), ("jwk", key.jwk.json)])))
            } else {
                say("user: \(context.user)")
                say("kid:  \(key.kid)")
                say("size: RSA-\(key.jwk.bits)")
                say("jwk:  \(JSONEncoding.encode(key.jwk.json))")
            }
            return 0
        default:
            throw UsageError("unknown key command '\(sub)'")
        }
    }

    /// Makes and saves a new device key; refuses to replace one unless `replace`.
    static func createKey(_ context: Context, bits: Int = 3072, replace: Bool = false) throws(CommandError) -> DeviceKey {
        if SafeFile.exists(context.paths.deviceKey) && !replace {
            throw CommandError("\(context.user) already has a device key (use --force to replace it)")
        }
        try context.makeUserDirectories()
        do {
            let key = try RSAPrivateKey.generate(bits: bits)
            try FileEnrollmentStore().saveKey(key, to: context.paths.deviceKey)
            return try DeviceKey(key: key)
        } catch {
            throw CommandError("cannot create the device key: \(error)")
        }
    }
}

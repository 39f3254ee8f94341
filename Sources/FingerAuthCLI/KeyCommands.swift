import FingerAuthCore
import FingerAuthCrypto
import FingerAuthSystem

/// `fingerauth key create|show|rotate`: the user's device key (RSA, PKCS#8 PEM, root 0600).
enum KeyCommands {
    static let usage = """
        usage: fingerauth key create [--user U] [--bits 3072|2048] [--force] [--config F] [--state-dir D]
               fingerauth key show [--user U] [--json] [--config F] [--state-dir D]
               fingerauth key rotate [--user U] [--bits 3072|2048] [--config F] [--state-dir D]
          create  makes the key (refuses to replace one without --force); register it afterwards
          show    prints the kid (RFC 7638 thumbprint), size and public JWK; never the private key
          rotate  makes a new key, registers it, revokes the old one at the authenticator, and
                  only then deletes the old one
          All need root. Exit status: 0 done, 1 failed (the message says what to do), 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first else { throw UsageError("key needs create, show or rotate") }
        let rest = Array(words.dropFirst())
        switch sub {
        case "create":
            let args = try Arguments(rest, options: Context.commonOptions.union(["bits"]), flags: ["force"])
            let bits = try parseBits(args)
            try Context.requireRoot("key create")
            let context = try Context(args, requireURL: false)
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
        case "rotate":
            let args = try Arguments(rest, options: Context.commonOptions.union(["bits"]), flags: [])
            let bits = try parseBits(args)
            try Context.requireRoot("key rotate")
            let context = try Context(args, requireURL: true)
            return try KeyRotation(context: context, bits: bits).run()
        default:
            throw UsageError("unknown key command '\(sub)'")
        }
    }

    static func parseBits(_ args: Arguments) throws(UsageError) -> Int {
        let bits = Int(args["bits"] ?? "3072") ?? 0
        guard bits == 2048 || bits == 3072 else { throw UsageError("--bits must be 3072 or 2048") }
        return bits
    }

    /// Makes and saves a new device key; refuses to replace one unless `replace`.
    static func createKey(_ context: Context, bits: Int = 3072, replace: Bool = false) throws(CommandError) -> DeviceKey {
        if SafeFile.exists(context.paths.deviceKey) && !replace {
            throw CommandError("\(context.user) already has a device key (use --force to replace it, or: fingerauth key rotate)")
        }
        try context.makeUserDirectories()
        return try generate(bits: bits, to: context.paths.deviceKey)
    }

    /// A new key written to `path` (root 0600, atomically).
    static func generate(bits: Int, to path: String) throws(CommandError) -> DeviceKey {
        do {
            let key = try RSAPrivateKey.generate(bits: bits)
            try DeviceKeyFile().saveKey(key, to: path)
            return try DeviceKey(key: key)
        } catch {
            throw CommandError("cannot create the device key: \(error)")
        }
    }
}

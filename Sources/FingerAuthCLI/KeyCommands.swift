import FingerAuthCore
import FingerAuthCrypto
import FingerAuthKeyFormats
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM

/// `fingerauth key create|show|rotate`: the user's device key, in the TPM (a TPM-wrapped
/// `TSS2 PRIVATE KEY` file, root 0600) or in a file (RSA, PKCS#8 PEM, root 0600); and
/// `fingerauth key ek`: the name of this host's TPM endorsement key, for the authenticator's
/// admin to pin (`fingerauthd hosts add-ek`).
enum KeyCommands {
    static let usage = """
        usage: fingerauth key create [--user U] [--store tpm|file|auto] [--bits 3072|2048] [--force] [--config F] [--state-dir D]
               fingerauth key show [--user U] [--json] [--config F] [--state-dir D]
               fingerauth key rotate [--user U] [--store tpm|file|auto] [--bits 3072|2048] [--config F] [--state-dir D]
               fingerauth key ek [--json] [--config F]
          create  makes the key (refuses to replace one without --force); register it afterwards.
                  --store (default: key_store, else file): tpm makes an RSA-2048 key inside the TPM
                  (tpm_tcti) that cannot leave it; file an RSA key file; auto the TPM when one
                  answers and holds an EK certificate, else a file
          show    prints the kid (RFC 7638 thumbprint), size and public JWK; never the private key
          rotate  makes a new key, registers it, revokes the old one at the authenticator, and
                  only then deletes the old one
          ek      prints this host's TPM endorsement key (tpm_tcti) as the authenticator names it:
                  the SHA-256 of its public key (DER SubjectPublicKeyInfo) from the EK certificate,
                  the same as sha256sum of `tpm2_readpublic -c EK -f der -o ek.der`. The
                  authenticator's admin pins it: fingerauthd hosts add-ek HOST HASH
          All need root. Exit status: 0 done, 1 failed (the message says what to do), 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first else { throw UsageError(message: "key needs create, show, rotate or ek") }
        let rest = Array(words.dropFirst())
        switch sub {
        case "create":
            let args = try CommandArguments(
                rest, valued: Context.commonOptions.union(["bits", "store"]), switches: ["force"])
            try Context.requireRoot("key create")
            let context = try Context(args, requireURL: false)
            let store = try KeyStores.choose(args, options: context.options)
            let bits = try KeyStores.bits(args, store: store)
            let key = try createKey(context, store: store, bits: bits, replace: args.has("force"))
            say("created device key for \(context.user): kid \(key.kid) (\(KeyStores.describe(key)))")
            say("register it with: fingerauth register --user \(context.user)")
            return 0
        case "show":
            let args = try CommandArguments(rest, valued: Context.commonOptions, switches: ["json"])
            try Context.requireRoot("key show")
            let context = try Context(args, requireURL: false)
            let key = try context.loadDeviceKey()
            if args.has("json") {
                say(
                    JSONEncoding.encode(
                        .object([
                            ("user", .string(context.user)), ("kid", .string(key.kid)),
                            ("bits", .integer(Int64(key.jwk.bits))), ("store", .string(key.storeName)),
                            ("jwk", key.jwk.json),
                        ])))
            } else {
                say("user: \(context.user)")
                say("kid:  \(key.kid)")
                say("size: RSA-\(key.jwk.bits)")
                say("store: \(key.storeName)")
                say("jwk:  \(JSONEncoding.encode(key.jwk.json))")
            }
            return 0
        case "ek":
            let args = try CommandArguments(rest, valued: ["config"], switches: ["json"])
            try Context.requireRoot("key ek")
            return try endorsementKey(try Context.loadOptions(args, requireURL: false), json: args.has("json"))
        case "rotate":
            let args = try CommandArguments(rest, valued: Context.commonOptions.union(["bits", "store"]))
            try Context.requireRoot("key rotate")
            let context = try Context(args, requireURL: true)
            let store = try KeyStores.choose(args, options: context.options)
            return try KeyRotation(context: context, store: store, bits: try KeyStores.bits(args, store: store)).run()
        default:
            throw UsageError(message: "unknown key command '\(sub)'")
        }
    }

    /// `key ek`: the EK certificate read from the TPM's NV index, and the name of its key.
    static func endorsementKey(_ options: Options, json: Bool) throws(CommandError) -> Int32 {
        let tcti = options.tpmTCTI ?? TPMConnection.defaultTCTI
        let der: [UInt8]
        do {
            let connection = try TPMConnection(tcti: tcti)
            defer { connection.close() }
            let attestor = TPMAttestor(connection: connection)
            defer { attestor.close() }
            der = try attestor.endorsementCertificate()
        } catch {
            throw CommandError(
                "cannot read the EK certificate of the TPM at \(tcti): \(error.description); \(error.advice)")
        }
        guard let certificate = try? X509Certificate(der: der), let ek = EndorsementKeyID.of(certificate) else {
            throw CommandError("the TPM's EK certificate (NV index 0x1c00002) does not parse")
        }
        if json {
            say(
                JSONEncoding.encode(
                    .object([
                        ("ek", .string(ek)), ("host", .string(options.hostID ?? currentHostName())),
                        ("certificate_subject", .string(certificate.subject)),
                    ])))
        } else {
            say(ek)
        }
        return 0
    }

    /// Makes and saves a new device key; refuses to replace one unless `replace`.
    static func createKey(_ context: Context, store: KeyStores.Store, bits: Int, replace: Bool = false)
        throws(CommandError) -> DeviceKey
    {
        if SafeFile.exists(context.paths.deviceKey) && !replace {
            throw CommandError(
                "\(context.user) already has a device key (use --force to replace it, or: fingerauth key rotate)")
        }
        try context.makeUserDirectories()
        return try KeyStores.generate(store, bits: bits, to: context.paths.deviceKey, options: context.options)
    }
}

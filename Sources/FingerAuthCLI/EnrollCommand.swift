import FingerAuthCore
import FingerAuthCrypto
import FingerAuthReader
import FingerAuthSystem

/// `fingerauth enroll`: reads a finger with libfprint, saves the print (root 0600), makes
/// the device key if there is none, and registers it unless `--no-register`.
enum EnrollCommand {
    static let usage = """
        usage: fingerauth enroll [--user U] [--finger NAME] [--store tpm|file|auto] [--force] [--no-register] [--config F] [--state-dir D]
          Reads the finger (one line per stage, `stage 3/5`, and the reader's hints), saves the
          print (root 0600) — or, where fprintd takes the prints (reader = fprintd, or auto with
          fprintd installed), enrolls it through fprintd and saves none —, creates the device key if there is none and registers it with the
          authenticator unless --no-register (a TPM key with its attestation). --store as in key create.
          Refuses to replace an enrolled finger without --force.
          Default finger right-index-finger; default user $SUDO_USER under sudo, else you. Needs root.
          finger names: \(Finger.allCases.map(\.rawValue).joined(separator: ", "))
          Exit status: 0 enrolled (and registered), 1 failed (the message says what to do), 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(
            words, valued: Context.commonOptions.union(["finger", "store"]), switches: ["force", "no-register"])
        let fingerName = args["finger"] ?? Finger.rightIndex.rawValue
        guard let finger = Finger(rawValue: fingerName) else {
            throw UsageError(message: "unknown finger '\(fingerName)'")
        }
        try Context.requireRoot("enroll")
        let register = !args.has("no-register")
        let context = try Context(args, requireURL: register)
        let store = try KeyStores.choose(args, options: context.options)
        let printPath = context.paths.printFile(finger: finger.rawValue)
        let backend = ReaderBackendChoice.decide(context.options, user: context.user, forEnroll: true)
        if backend.kind == .fprintd {
            if register { try RegisterCommand.checkPolicy(context: context) }
            try context.makeUserDirectories()
            try FprintdEnrollment.enroll(backend, finger: finger, user: context.user, force: args.has("force"))
            return try keyAndRegistration(context, store: store, register: register)
        }
        if SafeFile.exists(printPath) && !args.has("force") {
            throw CommandError("\(finger.rawValue) is already enrolled for \(context.user) (use --force to replace it)")
        }
        if register { try RegisterCommand.checkPolicy(context: context) }
        try context.makeUserDirectories()

        let reader: FingerprintReader
        do {
            reader = try FingerprintReader.open(
                virtualReader: context.options.virtualReader,
                virtualStorageReader: context.options.virtualStorageReader)
        } catch {
            throw CommandError("\(error.message)")
        }
        say(
            "enrolling \(finger.rawValue) for \(context.user) on \(reader.name): place your finger on the reader, lift it, and repeat until every stage is done"
        )
        let print: [UInt8]
        do {
            print = try reader.enroll(finger: finger, username: context.user, deadline: .after(seconds: 120)) {
                progress in
                switch progress {
                case let .stage(done, total): say("stage \(done)/\(total)")
                case let .retry(hint): say(hint)
                }
            }
        } catch {
            throw CommandError("enrollment failed: \(error.message)")
        }
        do {
            try SafeFile.writeAtomically(printPath, print, mode: 0o600)
        } catch {
            throw CommandError("cannot save the print: \(error)")
        }
        say(
            "enrolled \(finger.rawValue) for \(context.user)"
                + (reader.hasStorage ? " (the print is stored on the sensor)" : ""))
        return try keyAndRegistration(context, store: store, register: register)
    }

    /// The device key (made when there is none) and its registration, after the finger.
    static func keyAndRegistration(_ context: Context, store: KeyStores.Store, register: Bool) throws -> Int32 {
        let key: DeviceKeyRef
        if SafeFile.exists(context.paths.deviceKey) {
            key = .init(try context.loadDeviceKey(), created: false)
        } else {
            key = .init(
                try KeyCommands.createKey(context, store: store, bits: store == .tpm ? 2048 : 3072), created: true)
            say("created device key: kid \(key.key.kid)" + (key.key.isHardware ? " (RSA-2048 in the TPM)" : ""))
        }
        guard register else {
            say("not registered (--no-register); run: fingerauth register --user \(context.user)")
            return 0
        }
        do {
            let status = try RegisterCommand.register(key.key, context: context)
            say("registered key \(key.key.kid) at \(RegisterCommand.keysURL(context.options)): \(status)")
            RegisterCommand.pendingHint(status, kid: key.key.kid)
        } catch {
            printError("fingerauth: enrolled, but the key is not registered: \(error.message)")
            printError("fingerauth: fix that, then run: fingerauth register --user \(context.user)")
            return 1
        }
        return 0
    }
}

/// A device key and whether this enrollment made it.
struct DeviceKeyRef {
    let key: DeviceKey
    let created: Bool
    init(_ key: DeviceKey, created: Bool) {
        self.key = key
        self.created = created
    }
}

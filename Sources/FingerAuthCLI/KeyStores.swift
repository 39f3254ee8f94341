import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM

/// Where new device keys are made: `--store tpm|file`, else `key_store` (tpm, file, auto).
enum KeyStores {
    /// The two stores a key can be in.
    enum Store: String {
        case tpm, file
    }

    /// The store for a new key: `--store` wins over `key_store` (default file); `auto` is
    /// the TPM when one answers at `tpm_tcti` (or /dev/tpmrm0) and holds an EK certificate
    /// (firmware TPMs often keep theirs online only: such a key could not be attested), else
    /// a file.
    static func choose(_ args: CommandArguments, options: Options) throws(UsageError) -> Store {
        let choice: KeyStoreChoice
        if let given = args["store"] {
            guard let parsed = KeyStoreChoice(rawValue: given) else {
                throw UsageError(message: "--store must be tpm, file or auto")
            }
            choice = parsed
        } else {
            choice = options.keyStore
        }
        switch choice {
        case .tpm: return .tpm
        case .file: return .file
        case .auto:
            let tcti = options.tpmTCTI ?? TPMConnection.defaultTCTI
            guard TPMProbe.state(tcti: tcti) == .ready, let connection = try? TPMConnection(tcti: tcti),
                (try? TPMAttestor(connection: connection).endorsementCertificate()) != nil
            else { return .file }
            return .tpm
        }
    }

    /// `--bits`: 3072 (default) or 2048 for a file key; a TPM key is RSA-2048, what every
    /// TPM 2.0 has.
    static func bits(_ args: CommandArguments, store: Store) throws(UsageError) -> Int {
        switch store {
        case .file:
            let bits = Int(args["bits"] ?? "3072") ?? 0
            guard bits == 2048 || bits == 3072 else { throw UsageError(message: "--bits must be 3072 or 2048") }
            return bits
        case .tpm:
            guard args["bits"] == nil || args["bits"] == "2048" else {
                throw UsageError(message: "a TPM key is RSA-2048 (--bits 2048)")
            }
            return 2048
        }
    }

    /// A new key of `store` written to `path` (root 0600, atomically).
    static func generate(_ store: Store, bits: Int, to path: String, options: Options) throws(CommandError) -> DeviceKey
    {
        switch store {
        case .file:
            do {
                let key = try RSAPrivateKey.generate(bits: bits)
                try DeviceKeyFile().saveKey(key, to: path)
                return try DeviceKey(key: key)
            } catch {
                throw CommandError("cannot create the device key: \(error)")
            }
        case .tpm:
            let tcti = options.tpmTCTI ?? TPMConnection.defaultTCTI
            do {
                let connection = try TPMConnection(tcti: tcti)
                let file = try TPMDeviceKey.create(on: connection)
                try DeviceKeyLoader.save(file, to: path)
                return try DeviceKey(hardware: try TPMDeviceKey(file: file, connection: connection))
            } catch let error as TPMError {
                throw CommandError("cannot create a TPM key at \(tcti): \(error.description); \(error.advice)")
            } catch {
                throw CommandError("cannot create the TPM key: \(error)")
            }
        }
    }

    /// How `key show` and `status` describe a key.
    static func describe(_ key: DeviceKey) -> String {
        key.isHardware ? "RSA-\(key.jwk.bits) in the TPM" : "RSA-\(key.jwk.bits)"
    }
}

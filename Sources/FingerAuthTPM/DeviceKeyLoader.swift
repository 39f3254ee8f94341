import FingerAuthCore
import FingerAuthCrypto
import FingerAuthKeyFormats
import FingerAuthSystem

/// Loads a device key file of either store, by what the file is: a `TSS2 PRIVATE KEY`
/// PEM is loaded into the TPM at `tcti`, anything else is read as a PKCS#8 file key.
package struct DeviceKeyLoader {
    /// Which TPM: `tpm_tcti` from root-owned configuration, else the kernel's device.
    package let tcti: String

    package init(tcti: String?) { self.tcti = tcti ?? TPMConnection.defaultTCTI }

    /// The key, ready to sign; for a TPM key the failure names the TPM's state and the fix.
    package func load(_ path: String) -> Result<DeviceKey, KeyLoadError> {
        switch readTPMFile(path) {
        case .notTPM: return DeviceKeyFile().loadKey(path)
        case let .failed(error): return .failure(KeyLoadError(error))
        case let .tpm(file):
            do {
                let connection = try TPMConnection(tcti: tcti)
                let key = try TPMDeviceKey(file: file, connection: connection)
                // In lockout the TPM would refuse to sign only after the finger matched.
                try TPMProbe.refuseLockout(connection)
                return .success(try DeviceKey(hardware: key))
            } catch let error as TPMError {
                return .failure(
                    KeyLoadError(
                        "\(path): TPM key unusable (\(error.kind.rawValue)): \(error.description); \(error.advice)"))
            } catch {
                return .failure(KeyLoadError("\(path): \(error)"))
            }
        }
    }

    /// The TPM state behind a TPM key file that does not load; nil when it loads or is a
    /// file key.
    package func tpmFailure(_ path: String) -> TPMError? {
        guard case let .tpm(file) = readTPMFile(path) else { return nil }
        do {
            let connection = try TPMConnection(tcti: tcti)
            _ = try TPMDeviceKey(file: file, connection: connection)
            try TPMProbe.refuseLockout(connection)
            return nil
        } catch {
            return error
        }
    }

    /// The kid and store of a key file, read without the TPM (a cleared TPM's key can still
    /// be named, and revoked by that name).
    package static func describe(_ path: String) -> (kid: String, store: String)? {
        switch DeviceKeyLoader(tcti: nil).readTPMFile(path) {
        case .failed: return nil
        case let .tpm(file):
            guard let key = try? TPMDeviceKey.publicKey(of: file),
                let kid = Digest.thumbprint(of: JWK(n: key.modulus, e: key.exponentBytes))
            else { return nil }
            return (kid, "tpm")
        case .notTPM:
            guard case let .success(key) = DeviceKeyFile().loadKey(path) else { return nil }
            return (key.kid, "file")
        }
    }

    /// Writes a TPM key file as `TSS2 PRIVATE KEY` PEM, root 0600, atomically.
    package static func save(_ file: TPMKeyFile, to path: String) throws {
        try SafeFile.writeAtomically(path, try PEMBlock.encode(label: TPMKeyFile.pemLabel, der: file.der), mode: 0o600)
    }

    enum Read {
        case notTPM
        case tpm(TPMKeyFile)
        case failed(String)
    }

    func readTPMFile(_ path: String) -> Read {
        var pem: [UInt8]
        do {
            pem = try SafeFile.read(path, rule: .secret)
        } catch {
            return .failed(error.description)
        }
        defer { wipe(&pem) }
        guard PEMBlock.label(pem) == TPMKeyFile.pemLabel else { return .notTPM }
        guard let block = PEMBlock.decode(pem), block.label == TPMKeyFile.pemLabel,
            let file = try? TPMKeyFile(der: block.der)
        else {
            return .failed("\(path): not a usable TSS2 PRIVATE KEY")
        }
        return .tpm(file)
    }
}

/// Whether a TPM answers at `tcti` (for `key_store = auto` and `status`).
package enum TPMProbe {
    /// TPM2_PT_PERMANENT, and its inLockout bit (TPMA_PERMANENT, Part 2 8.6).
    package static let permanent: UInt32 = 0x200
    package static let inLockout: UInt32 = 1 << 9

    package enum State: Equatable, Sendable {
        case ready
        case lockout
        case unreachable(String)
    }

    /// Throws `lockout` when the TPM is in dictionary-attack lockout.
    static func refuseLockout(_ connection: TPMConnection) throws(TPMError) {
        if let flags = try connection.property(permanent), flags & inLockout != 0 {
            throw TPMError(.lockout, "the TPM is in dictionary-attack lockout (TPMA_PERMANENT inLockout)")
        }
    }

    package static func state(tcti: String) -> State {
        if tcti.hasPrefix("device:"), !SafeFile.exists(String(tcti.dropFirst(7))) {
            return .unreachable("\(tcti.dropFirst(7)) does not exist")
        }
        do {
            let connection = try TPMConnection(tcti: tcti)
            defer { connection.close() }
            guard let flags = try connection.property(permanent) else { return .unreachable("no TPM2_PT_PERMANENT") }
            return flags & inLockout != 0 ? .lockout : .ready
        } catch {
            return .unreachable(error.description)
        }
    }
}

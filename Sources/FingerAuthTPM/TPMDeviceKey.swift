import CTSS2
import FingerAuthCore
import FingerAuthCrypto
import FingerAuthKeyFormats

/// A device key inside the TPM: RSA-2048, RSASSA-SHA-256, sign only, `fixedTPM`,
/// `fixedParent`, `sensitiveDataOrigin`, under the storage primary of the owner hierarchy.
/// What is on disk (`TPMKeyFile`) is the key wrapped by that primary: only this TPM, with
/// its present owner seed, can load it. Root on this host can still have the TPM sign; what
/// root cannot do is carry the key to another machine.
package final class TPMDeviceKey: HardwareKey {
    package let file: TPMKeyFile
    package let publicKey: TPMPublicKey
    package let jwk: JWK
    package let connection: TPMConnection
    private(set) var handle: ESYS_TR
    /// Why the last signature failed, for the helper's reason line.
    package private(set) var lastError: TPMError?

    /// Makes a new key in the TPM; returns its key file (the key is not left loaded).
    package static func create(on connection: TPMConnection) throws(TPMError) -> TPMKeyFile {
        let (primary, _) = try connection.createPrimary(
            ESYS_TR(ESYS_TR_RH_OWNER), template: TPMTemplates.storagePrimary)
        defer { connection.flush(primary) }
        let made = try connection.create(parent: primary, template: TPMTemplates.signingKey(restricted: false))
        return TPMKeyFile(publicArea: made.publicArea, privateArea: made.privateArea)
    }

    /// The public key of a key file, read without any TPM.
    package static func publicKey(of file: TPMKeyFile) throws(TPMError) -> TPMPublicKey {
        do {
            return try TPMPublicKey(tpm2b: file.publicArea)
        } catch {
            throw TPMError(.badKeyFile, "the key file's public area: \(error)")
        }
    }

    /// Loads the key file into the TPM at `connection`. Fails with `foreignKey` when this
    /// TPM cannot unwrap it (cleared since, or another machine's TPM).
    package init(file: TPMKeyFile, connection: TPMConnection) throws(TPMError) {
        guard file.parent == TPMKeyFile.ownerParent else {
            throw TPMError(
                .badKeyFile, "the key's parent 0x\(String(file.parent, radix: 16)) is not the owner hierarchy")
        }
        guard file.emptyAuth else { throw TPMError(.badKeyFile, "keys with a password are not supported") }
        let publicKey = try TPMDeviceKey.publicKey(of: file)
        self.file = file
        self.publicKey = publicKey
        jwk = JWK(n: publicKey.modulus, e: publicKey.exponentBytes)
        self.connection = connection
        let (primary, _) = try connection.createPrimary(
            ESYS_TR(ESYS_TR_RH_OWNER), template: TPMTemplates.storagePrimary)
        defer { connection.flush(primary) }
        handle = try connection.load(parent: primary, publicArea: file.publicArea, privateArea: file.privateArea)
    }

    deinit { connection.flush(handle) }

    /// RS256 made by the TPM: SHA-256 here, RSASSA inside the TPM.
    package func signRS256(_ input: [UInt8]) -> [UInt8]? {
        guard let digest = Digest.sha256(input) else { return nil }
        do {
            let signature = try TPMSignature(try connection.signRSASSA(handle, digest: digest))
            lastError = nil
            return signature.signature
        } catch let error as TPMError {
            lastError = error
            return nil
        } catch {
            lastError = TPMError(.failed, "TPM2_Sign: \(error)")
            return nil
        }
    }
}

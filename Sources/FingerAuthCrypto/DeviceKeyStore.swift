import FingerAuthCore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// A key whose private half stays in hardware (the TPM): it signs, it never leaves.
package protocol HardwareKey: AnyObject {
    /// The public half.
    var jwk: JWK { get }
    /// RS256 signature made by the hardware; nil when it refused or could not be reached.
    func signRS256(_ input: [UInt8]) -> [UInt8]?
}

/// A loaded device key: signs tokens, names itself by its RFC 7638 thumbprint. Either a
/// PKCS#8 file key (`software`) or a TPM-resident one (`hardware`); tokens say which in
/// `amr` (`swk` or `hwk`).
package final class DeviceKey: TokenSigner {
    package enum Backing {
        case software(RSAPrivateKey)
        case hardware(HardwareKey)
    }

    package let backing: Backing
    package let jwk: JWK
    package let kid: String

    package init(key: RSAPrivateKey) throws {
        backing = .software(key)
        jwk = try key.publicJWK()
        kid = try DeviceKey.thumbprint(jwk)
    }

    package init(hardware: HardwareKey) throws {
        backing = .hardware(hardware)
        jwk = hardware.jwk
        kid = try DeviceKey.thumbprint(jwk)
    }

    /// True for a TPM key.
    package var isHardware: Bool {
        if case .hardware = backing { return true }
        return false
    }

    /// `tpm` or `file`: the key store, as the command line and `status` name it.
    package var storeName: String { isHardware ? "tpm" : "file" }

    package func signRS256(_ input: [UInt8]) -> [UInt8]? {
        switch backing {
        case let .software(key): return try? key.signRS256(input)
        case let .hardware(key): return key.signRS256(input)
        }
    }

    static func thumbprint(_ jwk: JWK) throws -> String {
        guard let kid = Digest.thumbprint(of: jwk) else {
            throw CryptoError(operation: "thumbprint", reason: "SHA-256 failed")
        }
        return kid
    }
}

/// Device key files (`StatePaths.deviceKey`): read and written the safe way. Used by the login
/// helper and the command line; the module never touches a key.
package struct DeviceKeyFile {
    package init() {}

    /// Reads and parses a device key file; the PEM buffer is wiped after parsing.
    package func loadKey(_ path: String) -> Result<DeviceKey, KeyLoadError> {
        var pem: [UInt8]
        do {
            pem = try SafeFile.read(path, rule: .secret)
        } catch {
            return .failure(KeyLoadError(error.description))
        }
        defer { wipe(&pem) }
        do {
            return .success(try DeviceKey(key: RSAPrivateKey(pem: pem)))
        } catch {
            return .failure(KeyLoadError("\(path): not a usable RSA private key (encrypted keys are not supported)"))
        }
    }

    /// Writes `key` as PKCS#8 PEM, root 0600, atomically; the PEM buffer is wiped after.
    package func saveKey(_ key: RSAPrivateKey, to path: String) throws {
        var pem = try key.pkcs8PEM()
        defer { wipe(&pem) }
        try SafeFile.writeAtomically(path, pem, mode: 0o600)
    }
}

/// Overwrites secret bytes before they are released.
package func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
    }
}

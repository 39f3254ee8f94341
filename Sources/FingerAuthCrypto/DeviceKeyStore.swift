#if canImport(Glibc)
import Glibc
#endif
import FingerAuthCore
import FingerAuthSystem

/// A loaded device key: signs tokens, names itself by its RFC 7638 thumbprint.
public final class DeviceKey: TokenSigner {
    public let key: RSAPrivateKey
    public let jwk: JWK
    public let kid: String

    public init(key: RSAPrivateKey) throws {
        self.key = key
        jwk = try key.publicJWK()
        guard let kid = Digest.thumbprint(of: jwk) else {
            throw CryptoError(operation: "thumbprint", reason: "SHA-256 failed")
        }
        self.kid = kid
    }

    public func signRS256(_ input: [UInt8]) -> [UInt8]? { try? key.signRS256(input) }
}

/// Device key files (DESIGN "Files"): read and written the safe way. Used by the login
/// helper and the command line; the module never touches a key.
public struct DeviceKeyFile {
    public init() {}

    /// Reads and parses a device key file; the PEM buffer is wiped after parsing.
    public func loadKey(_ path: String) -> Result<DeviceKey, KeyLoadError> {
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
    public func saveKey(_ key: RSAPrivateKey, to path: String) throws {
        var pem = try key.pkcs8PEM()
        defer { wipe(&pem) }
        try SafeFile.writeAtomically(path, pem, mode: 0o600)
    }
}

/// Overwrites secret bytes before they are released.
public func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
    }
}

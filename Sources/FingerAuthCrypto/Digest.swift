import COpenSSL
import FingerAuthCore

/// Message digests through EVP_Digest.
package enum Digest {
    /// SHA-256 of `data` (EVP_Digest with EVP_sha256); nil only if libcrypto fails.
    package static func sha256(_ data: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &out, &length, EVP_sha256(), nil)
        }
        guard ok == 1, length == 32 else { return nil }
        return out
    }

    /// Lowercase hex of `bytes`.
    package static func hex(_ bytes: [UInt8]) -> String { Hex.lowercase(bytes) }

    /// RFC 7638 JWK thumbprint (SHA-256, base64url): the key id everywhere in FingerAuth.
    package static func thumbprint(of jwk: JWK) -> String? {
        sha256(jwk.thumbprintInput).map(Base64URL.encode)
    }

    /// The same of an offline-grant key: the `kid` its grants name and hosts pin it by.
    package static func thumbprint(of key: GrantKeyJWK) -> String? {
        sha256(key.thumbprintInput).map(Base64URL.encode)
    }
}

/// Cryptographically secure random bytes (RAND_bytes).
package enum SecureRandom {
    package static func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= Int(Int32.max) else { return nil }
        var out = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&out, Int32(count)) == 1 else { return nil }
        return out
    }
}

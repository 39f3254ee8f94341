import COpenSSL
import FingerAuthCore

/// Admin passwords, hashed with scrypt (RFC 7914) through OpenSSL: memory-hard (32 MiB
/// and about 0.1 s per guess at N = 2^15, r = 8, p = 1), in the libcrypto every part of
/// FingerAuth already links. Argon2id would be the first choice, but OpenSSL 3.0 (Debian 12)
/// has no Argon2 and scrypt needs no further library. Stored as
/// `scrypt$<log2 N>$<r>$<p>$<salt>$<key>`, base64url.
package enum PasswordHash {
    static let logN: UInt64 = 15, r: UInt64 = 8, p: UInt64 = 1
    static let keyLength = 32
    /// Passwords longer than this are refused before hashing (no megabyte inputs).
    package static let maxPasswordBytes = 1024

    /// A new hash of `password` with a fresh 16-byte salt.
    package static func make(_ password: String) throws(CryptoError) -> String {
        guard let salt = SecureRandom.bytes(16) else {
            throw CryptoError(operation: "scrypt", reason: "no random bytes")
        }
        let key = try derive(password, salt: salt, logN: logN, r: r, p: p)
        return "scrypt$\(logN)$\(r)$\(p)$\(Base64URL.encode(salt))$\(Base64URL.encode(key))"
    }

    /// Whether `password` matches `stored` (constant-time comparison of the keys). A stored
    /// value of another form, or cost parameters out of range, never matches.
    package static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let logN = UInt64(parts[1]), (10...20).contains(logN),
            let r = UInt64(parts[2]), (1...16).contains(r), let p = UInt64(parts[3]), (1...4).contains(p),
            let salt = Base64URL.decode(String(parts[4])), let expected = Base64URL.decode(String(parts[5])),
            expected.count == keyLength,
            let key = try? derive(password, salt: salt, logN: logN, r: r, p: p)
        else { return false }
        return TPMAttestation.constantTimeEqual(key, expected)
    }

    private static func derive(_ password: String, salt: [UInt8], logN: UInt64, r: UInt64, p: UInt64)
        throws(CryptoError) -> [UInt8]
    {
        let bytes = Array(password.utf8)
        guard bytes.count <= maxPasswordBytes else {
            throw CryptoError(operation: "scrypt", reason: "password too long")
        }
        var key = [UInt8](repeating: 0, count: keyLength)
        let n: UInt64 = 1 << logN
        let maxMemory: UInt64 = 128 * r * n * p + 16 * 1024 * 1024
        let ok = password.withCString { pass in
            salt.withUnsafeBufferPointer { saltBytes in
                key.withUnsafeMutableBufferPointer { out in
                    EVP_PBE_scrypt(
                        pass, bytes.count, saltBytes.baseAddress, saltBytes.count, n, r, p, maxMemory,
                        out.baseAddress, out.count)
                }
            }
        }
        guard ok == 1 else { throw CryptoError.last("scrypt") }
        return key
    }
}

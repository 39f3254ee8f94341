import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain

/// Host enrollment tokens: 32 random bytes, base64url (43 characters). The registry keeps
/// only their SHA-256, as lowercase hex, so a copy of the database enrolls nothing.
package enum HostToken {
    /// Length of a token's text.
    package static let length = 43
    /// Length of a token's id in `token list`: the first hex digits of its SHA-256.
    package static let idLength = 16

    /// A new random token (RAND_bytes); nil only if the random source fails.
    package static func generate() -> String? {
        SecureRandom.bytes(32).map(Base64URL.encode)
    }

    /// The stored form of `token`: hex SHA-256 of its text. Nil for anything that is not
    /// shaped like a token, so junk never reaches the database.
    package static func hash(_ token: String) -> String? {
        guard token.utf8.count == length, Base64URL.decode(token)?.count == 32 else { return nil }
        return Digest.sha256(Array(token.utf8)).map(Hex.lowercase)
    }

    /// Whether `id` has the shape of a `token list` id: 16 lowercase hex digits.
    package static func isTokenID(_ id: String) -> Bool {
        id.utf8.count == idLength && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

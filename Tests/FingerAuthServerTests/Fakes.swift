import FingerAuthCore
import FingerAuthCrypto
import FingerAuthServer
#if canImport(Glibc)
import Glibc
#endif

/// A clock the test sets by hand (tests run on one thread).
final class FakeClock: AuthClock, @unchecked Sendable {
    var current: Int64

    init(_ start: Int64 = 1_800_000_000) { current = start }

    func now() -> Int64 { current }
}

/// Keys in a dictionary; `failing` makes every lookup throw like a broken database.
final class FakeKeys: KeyDirectory, @unchecked Sendable {
    var keys: [String: RegisteredKey] = [:]
    var failing = false

    func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? {
        if failing { throw StoreError("disk on fire") }
        return keys[kid]
    }
}

/// A replay set in memory.
final class FakeReplay: ReplayGuard, @unchecked Sendable {
    var seen: [String: Int64] = [:]

    func claimOnce(jti: String, exp: Int64, purgeBefore: Int64) throws(StoreError) -> Bool {
        seen = seen.filter { $0.value >= purgeBefore }
        guard seen[jti] == nil else { return false }
        seen[jti] = exp
        return true
    }
}

/// Shared RSA keys: generating them is the slow part of these tests.
enum TestKeys {
    static let alice: RSAPrivateKey? = try? RSAPrivateKey.generate(bits: 2048)
    static let other: RSAPrivateKey? = try? RSAPrivateKey.generate(bits: 2048)
}

/// Builds compact JWTs by hand, signed with FingerAuthCrypto.
struct TokenMaker {
    let key: RSAPrivateKey
    let jwk: JWK
    let kid: String

    init?(_ key: RSAPrivateKey?) {
        guard let key, let jwk = try? key.publicJWK(), let kid = Digest.thumbprint(of: jwk) else { return nil }
        self.key = key
        self.jwk = jwk
        self.kid = kid
    }

    static func claims(now: Int64, sub: String = "alice", iss: String = "host1", aud: JSONValue = .string("aud"),
                       ttl: Int64 = 30, jti: String = "jti-1") -> [(String, JSONValue)] {
        [("iss", .string(iss)), ("sub", .string(sub)), ("aud", aud), ("iat", .integer(now)),
         ("nbf", .integer(now)), ("exp", .integer(now + ttl)), ("jti", .string(jti))]
    }

    func header(alg: String = "RS256", kid: String? = nil, extra: [(String, JSONValue)] = []) -> JSONValue {
        .object([("alg", .string(alg)), ("typ", .string("JWT")), ("kid", .string(kid ?? self.kid))] + extra)
    }

    /// Signs `claims` under `header` (RS256 signature whatever the header says).
    func token(_ claims: [(String, JSONValue)], header: JSONValue? = nil) -> String {
        let input = CompactJWT.signingInput(header: header ?? self.header(), claims: .object(claims))
        let signature = (try? key.signRS256(input)) ?? []
        return CompactJWT.serialize(signingInput: input, signature: signature)
    }
}

/// A fresh database path under /tmp, removed by `cleanup`.
struct TempDatabase {
    let directory: String
    var path: String { directory + "/test.db" }

    init() {
        var template = Array("/tmp/fa-server-test.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        directory = made ?? "/tmp"
    }

    func cleanup() {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
        rmdir(directory)
    }
}

import FingerAuthCore

/// A registered device key's state.
public enum KeyStatus: String, Sendable, CaseIterable {
    /// Tokens signed by it are accepted.
    case active
    /// Registered while `approval = manual`; refused until `fingerauthd keys approve`.
    case pending
    /// Refused for good; the kid can never be registered again.
    case revoked
}

/// A public key as the registry holds it.
public struct RegisteredKey: Sendable, Equatable {
    /// RFC 7638 thumbprint of `jwk`.
    public var kid: String
    public var user: String
    public var host: String
    public var jwk: JWK
    public var status: KeyStatus
    /// Registration time, seconds since the epoch.
    public var created: Int64

    public init(kid: String, user: String, host: String, jwk: JWK, status: KeyStatus, created: Int64) {
        self.kid = kid
        self.user = user
        self.host = host
        self.jwk = jwk
        self.status = status
        self.created = created
    }
}

/// Finds registered keys by kid. `AuthStore` is the real one; tests use a dictionary.
public protocol KeyDirectory: Sendable {
    /// The key registered under `kid`, or nil.
    func registeredKey(kid: String) throws(StoreError) -> RegisteredKey?
}

/// Remembers every accepted `jti` until its token expires.
public protocol ReplayGuard: Sendable {
    /// Records `jti` atomically; false when it was already recorded. `purgeBefore`: rows
    /// whose `exp` is older may be forgotten.
    func claimOnce(jti: String, exp: Int64, purgeBefore: Int64) throws(StoreError) -> Bool
}

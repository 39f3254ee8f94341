import FingerAuthCore
import FingerAuthKeyFormats

/// A host key as the registry keeps it: the key a host signs its approval requests with.
package struct RegisteredHostKey: Sendable, Equatable {
    package var kid: String
    package var host: String
    package var jwk: JWK
    /// `active` or `revoked`.
    package var status: KeyStatus
    package var created: Int64
    package var revoked: Int64?
    package var kind: KeyOrigin
    package var ek: String?

    package init(
        kid: String, host: String, jwk: JWK, status: KeyStatus, created: Int64, revoked: Int64? = nil,
        kind: KeyOrigin = .software, ek: String? = nil
    ) {
        self.kid = kid
        self.host = host
        self.jwk = jwk
        self.status = status
        self.created = created
        self.revoked = revoked
        self.kind = kind
        self.ek = ek
    }
}

/// Where the verifier finds host keys.
package protocol HostKeyDirectory: Sendable {
    /// The host key `kid`, whatever its status; nil when unknown.
    func hostKey(kid: String) throws(StoreError) -> RegisteredHostKey?
}

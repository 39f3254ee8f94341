/// The `typ` header of each kind of token FingerAuth signs (RFC 8725 §3.11, explicit
/// typing): the authenticator accepts a token only at the endpoint for its kind, so a
/// captured login token cannot revoke a key and a revocation token is not a login.
package enum TokenType {
    /// A login token (`/v1/login`, `/login`, the `/oauth2/token` grant): plain `JWT`, as
    /// every JWT library writes it.
    package static let login = "JWT"
    /// The proof that comes with a key's registration (`POST /v1/keys`), signed by that key.
    package static let registrationProof = "fingerauth-proof+jwt"
    /// A key holder's revocation of their own key (`DELETE /v1/keys/<kid>`).
    package static let keyRevocation = "fingerauth-revoke+jwt"
    /// The proof that comes with a host key's registration (`POST /v1/hosts/keys`), signed
    /// by that host key.
    package static let hostKeyProof = "fingerauth-host-proof+jwt"
    /// A host's request for a remote approval (`POST /v1/approvals`), signed by its host key.
    package static let approvalRequest = "fingerauth-approval-request+jwt"
    /// A host's bearer token for one approval it asked for (`GET`/`DELETE
    /// /v1/approvals/<id>`), signed by its host key.
    package static let hostCall = "fingerauth-host+jwt"
    /// A workstation's watch for its user's pending approvals, signed by the device key.
    package static let watch = "fingerauth-watch+jwt"
    /// A workstation's decision on one approval (approve or deny), signed by the device key.
    package static let approvalDecision = "fingerauth-approval+jwt"
}

extension String {
    /// Equal byte for byte (UTF-8). Swift's `==` compares canonically equivalent strings as
    /// equal ("\u{212A}ate" == "Kate"); identities — user and host names, kids, jtis — are
    /// compared with this instead.
    package func sameBytes(as other: String) -> Bool {
        utf8.elementsEqual(other.utf8)
    }
}

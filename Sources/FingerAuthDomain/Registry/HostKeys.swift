import FingerAuthCore

/// A host's own key as the registry holds it: what signs the host's approval requests (the
/// issue's "hosts have credentials"), never a login. One active host key per host.
package struct RegisteredHostKey: Sendable, Equatable {
    /// RFC 7638 thumbprint of `jwk`.
    package var kid: String
    package var host: String
    package var jwk: JWK
    /// `active` or `revoked` (a host key is never pending).
    package var status: KeyStatus
    /// Registration time, seconds since the epoch.
    package var created: Int64
    /// When it was revoked, if it was.
    package var revoked: Int64?
    /// Where the private key lives, as far as the authenticator was shown.
    package var kind: KeyOrigin
    /// For an attested key: the EK of the TPM that attested it.
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

/// How a host key's registration ended in the store's transaction.
package enum HostKeyRegistration: Sendable, Equatable {
    /// A new key, now the host's active one (its previous active key revoked).
    case created
    /// The same key of the same host, still active: nothing written.
    case alreadyRegistered
    /// The kid is another host's host key, or a user's device key.
    case conflict
    /// The key was revoked; it is never registered again.
    case revoked
    /// The proof's `jti` was seen before: nothing registered.
    case proofReplayed
    /// An attested key from another TPM than the one the host's EK pin names.
    case ekMismatch

    /// The registration's audit row (`host_key_register`) for this outcome.
    package func audit(_ event: AuditEvent) -> AuditEvent {
        var row = event
        switch self {
        case .created:
            row.outcome = .accept
            row.reason = nil
        case .alreadyRegistered:
            row.outcome = .accept
            row.reason = .code(.alreadyRegistered)
        case .conflict:
            row.outcome = .deny
            row.reason = .code(.kidConflict)
        case .revoked:
            row.outcome = .deny
            row.reason = .token(.keyRevoked)
        case .proofReplayed:
            row.outcome = .deny
            row.reason = .proof(.replayed)
        case .ekMismatch:
            row.outcome = .deny
            row.reason = .code(.ekMismatch)
        }
        return row
    }

    /// A registration of `key` that found `existing` under its kid: the same host (byte
    /// for byte) has it already, unless revoked; another host's is a conflict.
    package static func existing(_ existing: RegisteredHostKey, for key: RegisteredHostKey) -> Self {
        guard existing.host.sameBytes(as: key.host) else { return .conflict }
        return existing.status == .revoked ? .revoked : .alreadyRegistered
    }
}

extension RegisteredHostKey {
    /// The audit row of a host key revoked because its host registered another one (a
    /// rotation after a reinstall): `host_key_revoke`, written in that registration's
    /// transaction, from the registration's `peer`.
    package func replacedAudit(peer: String?) -> AuditEvent {
        AuditEvent(
            event: .hostKeyRevoke, host: host, kid: kid, outcome: .accept, reason: .code(.hostKeyReplaced), peer: peer)
    }

    /// The audit row of an admin's revocation of this host key (`admin_revoke`, naming the kid).
    package func adminRevokeAudit(reason: ReasonCode, peer: String, admin: String?) -> AuditEvent {
        AuditEvent(
            event: .adminRevoke, host: host, kid: kid, outcome: .accept, reason: .code(reason), peer: peer,
            admin: admin)
    }
}

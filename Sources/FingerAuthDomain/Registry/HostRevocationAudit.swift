extension HostRevocation {
    /// The audit rows of this revocation, the same from the command line and the console:
    /// `token_revoke` for each host whose enrollment tokens went, `admin_revoke` (reason
    /// `host_revoked`) for each of its keys and host keys; `peer` and `admin` say who did it.
    package func auditEvents(peer: String, admin: String?) -> [AuditEvent] {
        hosts.map { AuditEvent(event: .tokenRevoke, host: $0, outcome: .accept, peer: peer, admin: admin) }
            + keys.map {
                AuditEvent(
                    event: .adminRevoke, user: $0.user, host: $0.host, kid: $0.kid, outcome: .accept,
                    reason: .code(.hostRevoked), peer: peer, admin: admin)
            }
            + hostKeys.map { $0.adminRevokeAudit(reason: .hostRevoked, peer: peer, admin: admin) }
    }
}

/// A host as `fingerauthd hosts list` shows it.
package struct HostSummary: Sendable, Equatable {
    package var host: String
    package var labels: [String]
    /// Enrollment tokens not revoked / in all.
    package var activeTokens: Int
    package var tokens: Int
    /// Keys registered on it, active or pending.
    package var keys: Int
    /// Its pinned TPM endorsement key, if any.
    package var ek: EKPin?

    package init(host: String, labels: [String], activeTokens: Int, tokens: Int, keys: Int, ek: EKPin?) {
        self.host = host
        self.labels = labels
        self.activeTokens = activeTokens
        self.tokens = tokens
        self.keys = keys
        self.ek = ek
    }
}

/// One page of a long list: `limit` items after the first `offset`.
package struct Paging: Sendable, Equatable {
    package var offset: Int
    package var limit: Int

    package init(offset: Int, limit: Int) {
        self.offset = max(0, offset)
        self.limit = max(1, limit)
    }
}

/// How a host's EK pin was made.
package enum EKSource: String, Sendable, Equatable {
    /// Recorded by the host's first attestation: whichever TPM attested first.
    case tofu
    /// Provisioned by an admin from the host's own `fingerauth key ek`.
    case admin
}

/// A host's pinned EK.
package struct EKPin: Sendable, Equatable {
    package var host: String
    /// 64 lowercase hex digits (`EndorsementKeyID`).
    package var ek: String
    package var source: EKSource
    /// When it was pinned, seconds since the epoch.
    package var pinned: Int64
    /// The admin who provisioned it; nil for a pin on first use.
    package var by: String?

    package init(host: String, ek: String, source: EKSource, pinned: Int64, by: String? = nil) {
        self.host = host
        self.ek = ek
        self.source = source
        self.pinned = pinned
        self.by = by
    }

    /// `admin 64db3988…` / `tofu 64db3988…`: how audit rows and tables name it.
    package var summary: String { "\(source.rawValue) \(ek)" }
}

/// A key and its user, as a change that revoked it reports it.
package struct KeyOwner: Sendable, Equatable {
    package var kid: String
    package var user: String

    package init(kid: String, user: String) {
        self.kid = kid
        self.user = user
    }
}

/// An admin's change to a host's pin.
package enum EKPinChange: Sendable, Equatable {
    /// Pins `ek` as provisioned by the admin. Over a pin on first use (of this or another EK)
    /// it replaces it; over another admin's pin only with `replace`.
    case provision(host: String, ek: String, replace: Bool)
    /// Removes the pin: the host's next attestation pins anew.
    case reset(host: String)

    /// The host the change is for.
    package var host: String {
        switch self {
        case let .provision(host, _, _), let .reset(host): return host
        }
    }
}

/// What an admin's change did.
package enum EKPinResult: Sendable, Equatable {
    /// Changed: the pin before and after, and the keys revoked because an EK other than the
    /// new pin attested them (they came from another TPM than the host's, as far as the
    /// authenticator now knows).
    case changed(before: EKPin?, after: EKPin?, revoked: [KeyOwner])
    /// The same EK was already provisioned by an admin.
    case unchanged(EKPin)
    /// Another EK is provisioned by an admin; `replace` was not given.
    case provisionedOther(EKPin)
    /// `reset` of a host without a pin.
    case nothingPinned
}

extension EKPinResult {
    /// The audit rows of an admin's change: one `ek_pin` row (`by ADMIN: before -> after`)
    /// and an `admin_revoke` row for each key it revoked.
    package func auditEvents(_ change: EKPinChange, admin: String, peer: String) -> [AuditEvent] {
        let host = change.host
        var row = AuditEvent(event: .ekPin, host: host, outcome: .accept, peer: peer)
        switch self {
        case let .changed(before, after, revoked):
            row.reason = .detail("by \(admin): \(before?.summary ?? "(none)") -> \(after?.summary ?? "(none)")")
            return [row]
                + revoked.map {
                    AuditEvent(
                        event: .adminRevoke, user: $0.user, host: host, kid: $0.kid, outcome: .accept,
                        reason: .code(.ekRepinned), peer: peer)
                }
        case let .unchanged(pin):
            row.reason = .detail("by \(admin): unchanged: \(pin.summary)")
        case let .provisionedOther(pin):
            row.outcome = .deny
            row.reason = .detail("by \(admin): provisioned_other: \(pin.summary)")
        case .nothingPinned:
            row.outcome = .deny
            row.reason = .detail("by \(admin): nothing_pinned")
        }
        return [row]
    }

    /// The `ek_pin` row of a pin made on first use by the registration `registration`.
    package static func firstUseAudit(_ pin: EKPin, registration: AuditEvent) -> AuditEvent {
        AuditEvent(
            event: .ekPin, user: registration.user, host: pin.host, kid: registration.kid, jti: registration.jti,
            outcome: .accept, reason: .detail("tofu: (none) -> \(pin.summary)"), peer: registration.peer)
    }
}

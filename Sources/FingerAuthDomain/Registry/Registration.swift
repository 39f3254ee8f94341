/// What a registration's outcome means for its audit row, and how a kid already
/// registered is judged. The stores run the transaction (`register`); the rules are here.
package enum Registration {
    /// The registration's audit row for `result`.
    package static func audit(_ event: AuditEvent, result: RegistrationResult, status: KeyStatus) -> AuditEvent {
        var row = event
        switch result {
        case .created:
            row.outcome = .accept
            row.reason = status == .pending ? .code(.pendingApproval) : nil
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
        case .tooManyKeys:
            row.outcome = .deny
            row.reason = .code(.tooManyKeys)
        case .ekMismatch:
            row.outcome = .deny
            row.reason = .code(.ekMismatch)
        }
        return row
    }

    /// A registration that found `existing` under the kid of `key`: the same user and host
    /// (compared byte for byte) are already registered; anything else is a conflict.
    package static func existing(_ existing: RegisteredKey, for key: RegisteredKey) -> RegistrationResult {
        guard existing.user.utf8.elementsEqual(key.user.utf8), existing.host.utf8.elementsEqual(key.host.utf8) else {
            return .conflict
        }
        return existing.status == .revoked ? .revoked : .alreadyRegistered
    }
}

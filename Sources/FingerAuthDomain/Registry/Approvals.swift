import FingerAuthCore

/// Where a remote approval stands. Only `pending` changes, exactly once, to one of the others.
package enum ApprovalStatus: String, Sendable, CaseIterable {
    /// Asked for, not yet decided; its workstations show it.
    case pending
    /// Approved by a finger on one of the user's workstations.
    case approved
    /// Denied ("Not me"): the user's requests are muted for a while.
    case denied
    /// Nobody decided before its expiry.
    case expired
    /// Withdrawn by the host that asked (the password was typed, Ctrl-C), or replaced by a
    /// retry from the same host and terminal.
    case withdrawn
}

/// A remote approval as the registry keeps it: a host (`host`, which proved itself with its
/// host key `hostKid`) asks that `user` approve a login to `service` there, from
/// `clientAddress` on `terminal`; the person sees `code` on both sides.
package struct ApprovalRecord: Sendable, Equatable {
    /// 22 base64url characters (128 random bits).
    package var id: String
    /// Two digits, `10` to `99`, shown at the host's prompt and in the notification.
    package var code: String
    package var user: String
    package var host: String
    package var hostKid: String
    package var service: String
    /// The client's address as the host's `PAM_RHOST` says it; empty when it has none.
    package var clientAddress: String
    /// The host's terminal (`PAM_TTY`); empty when it has none.
    package var terminal: String
    /// The host's session nonce: the decision must name it.
    package var nonce: String
    /// Who asks for the user's login when that is another user (the real user of a setuid
    /// host such as `su`, or the host's `PAM_RUSER`); empty when it is the user themself.
    package var caller: String
    package var created: Int64
    package var expires: Int64
    package var status: ApprovalStatus
    /// When it left `pending`, and for a decision, by which device key on which workstation.
    package var decided: Int64?
    package var decidedKid: String?
    package var workstation: String?

    package init(
        id: String, code: String, user: String, host: String, hostKid: String, service: String,
        clientAddress: String, terminal: String, nonce: String, caller: String = "", created: Int64, expires: Int64,
        status: ApprovalStatus = .pending, decided: Int64? = nil, decidedKid: String? = nil,
        workstation: String? = nil
    ) {
        self.id = id
        self.code = code
        self.user = user
        self.host = host
        self.hostKid = hostKid
        self.service = service
        self.clientAddress = clientAddress
        self.terminal = terminal
        self.nonce = nonce
        self.caller = caller
        self.created = created
        self.expires = expires
        self.status = status
        self.decided = decided
        self.decidedKid = decidedKid
        self.workstation = workstation
    }

    /// Pending and not past its expiry at `now`.
    package func isOpen(at now: Int64) -> Bool { status == .pending && now < expires }

    /// Whether `other` comes from the same place: a retry of the same login, which replaces it.
    package func sameOrigin(as other: ApprovalRecord) -> Bool {
        host.sameBytes(as: other.host) && terminal.sameBytes(as: other.terminal)
            && clientAddress.sameBytes(as: other.clientAddress) && service.sameBytes(as: other.service)
    }
}

/// How a request for an approval was admitted, in its one transaction.
package enum ApprovalAdmission: Sendable, Equatable {
    /// Recorded as pending; `replaced` is the retry's earlier approval, now withdrawn.
    case opened(replaced: String?)
    /// The user has another approval pending (from another host or terminal): refused.
    case pendingElsewhere(ApprovalRecord)
    /// The user denied an approval at `since`: requests are refused until `until`.
    case muted(until: Int64)
    /// The request's jti was used before.
    case replayed
}

/// A person's decision on an approval, from a verified decision token.
package struct ApprovalDecision: Sendable, Equatable {
    package var id: String
    /// The user whose device key signed it (the approval's own: the service checked).
    package var user: String
    package var approve: Bool
    /// The device key that signed it and its workstation (the key's host).
    package var kid: String
    package var workstation: String
    package var jti: String
    package var keepUntil: Int64

    package init(
        id: String, user: String, approve: Bool, kid: String, workstation: String, jti: String, keepUntil: Int64
    ) {
        self.id = id
        self.user = user
        self.approve = approve
        self.kid = kid
        self.workstation = workstation
        self.jti = jti
        self.keepUntil = keepUntil
    }
}

/// How a decision ended in its one transaction.
package enum DecisionResult: Sendable, Equatable {
    /// It decided the approval (the record after it).
    case decided(ApprovalRecord)
    /// The approval had left `pending` before: another workstation decided first, the host
    /// withdrew it, or it expired.
    case closed(ApprovalStatus)
    /// Pending, but past its expiry: it is `expired` now.
    case expired
    /// No such approval.
    case unknown
    /// The decision's jti was used before.
    case replayed
    /// The device key that signed it is no longer active (revoked since the decision was
    /// verified), or no longer registered to that user and workstation.
    case keyRefused(ClaimRefusal)
}

/// The approvals a host asks for and a person decides on their workstation
/// (`ApprovalEndpoints`), in the database so that every instance of a fleet sees one truth:
/// each call is one transaction of the store's own, and a pending approval leaves `pending`
/// exactly once whichever instance decides.
package protocol ApprovalStore: Sendable {
    /// Records `approval` (pending) in one transaction: the user's pending approvals past
    /// their expiry become `expired` (each with its audit row); a denial of the user within
    /// the last `muteSeconds` refuses it (`muted`); a pending approval of the user from the
    /// same origin (`ApprovalRecord.sameOrigin`) is withdrawn in its favour (with its row),
    /// any other refuses it (`pendingElsewhere`); then the request's `jti` is used up until
    /// `keepUntil`, the row inserted and `audit` written.
    func openApproval(
        _ approval: ApprovalRecord, jti: String, keepUntil: Int64, muteSeconds: Int64, audit: AuditEvent, now: Int64
    ) throws(StoreError) -> ApprovalAdmission
    /// The approval `id`, as it stands.
    func approval(id: String) throws(StoreError) -> ApprovalRecord?
    /// The user's pending approvals (at most one unexpired), newest first.
    func pendingApprovals(user: String, now: Int64) throws(StoreError) -> [ApprovalRecord]
    /// Applies `decision` in one transaction: the device key read again (it must still be
    /// active and registered to the decision's user and workstation, as a login's claim
    /// reads it), its jti used up, the approval decided only if
    /// it is still pending and unexpired (`UPDATE … WHERE status = 'pending'`), and the rows
    /// `audit` gives for the record after it written with it.
    func decideApproval(
        _ decision: ApprovalDecision, audit: @Sendable (ApprovalRecord) -> [AuditEvent], now: Int64
    ) throws(StoreError) -> DecisionResult
    /// Moves a pending approval to `status` (`withdrawn`, `expired`) with `audit`'s row, in
    /// one transaction; the record after it when this call changed it, nil otherwise.
    func closeApproval(
        id: String, as status: ApprovalStatus, audit: @Sendable (ApprovalRecord) -> AuditEvent, now: Int64
    ) throws(StoreError) -> ApprovalRecord?
    /// The last `limit` approvals of `user` and/or `host` (every one when both are nil), newest first.
    func approvals(user: String?, host: String?, limit: Int) throws(StoreError) -> [ApprovalRecord]
}

import FingerAuthDomain

// MARK: - Remote approvals

extension SQLRegistry {
    /// Everything a refusal depends on is read before anything is written, so that a refused
    /// request (muted, pending elsewhere, replayed) writes nothing: the service audits
    /// refusals itself, a bounded number per window. The user's overdue pending approvals are
    /// therefore expired only by a request that is admitted; until then nothing counts them
    /// (the checks look at unexpired rows only). Requests of one user wait for each other
    /// (`LockScope.approvals`), so that two instances cannot both open one.
    package func openApproval(
        _ approval: ApprovalRecord, jti: String, keepUntil: Int64, muteSeconds: Int64, audit: AuditEvent, now: Int64
    ) throws(StoreError) -> ApprovalAdmission {
        try write { (db) throws(StoreError) -> ApprovalAdmission in
            try db.serialize(.approvals(user: approval.user))
            let open = try ApprovalTables.pending(db, user: approval.user, now: now)
            if muteSeconds > 0,
                let denied = try ApprovalTables.lastDenial(db, user: approval.user, after: now &- muteSeconds)
            {
                return .muted(until: denied &+ muteSeconds)
            }
            if let other = open.first(where: { !$0.sameOrigin(as: approval) }) { return .pendingElsewhere(other) }
            guard try KeyTables.claim(db, jti: jti, keepUntil: keepUntil) else { return .replayed }
            for expired in try ApprovalTables.expireOverdue(db, user: approval.user, now: now) {
                try AuditTables.insert(db, ApprovalTables.audit(expired, .approvalExpired), time: now)
                try Self.announce(db, expired)
            }
            var replaced: String?
            for retried in open {
                // Nil when another instance decided it meanwhile: then it is not replaced.
                guard let withdrawn = try ApprovalTables.close(db, id: retried.id, as: .withdrawn, now: now) else {
                    continue
                }
                var row = ApprovalTables.audit(withdrawn, .approvalWithdrawn, reason: .replacedByRetry)
                row.peer = audit.peer
                try AuditTables.insert(db, row, time: now)
                try Self.announce(db, withdrawn)
                replaced = withdrawn.id
            }
            try ApprovalTables.insert(db, approval)
            try AuditTables.insert(db, audit, time: now)
            try Self.announce(db, approval)
            return .opened(replaced: replaced)
        }
    }

    package func approval(id: String) throws(StoreError) -> ApprovalRecord? {
        try read { (db) throws(StoreError) in try ApprovalTables.approval(db, id: id) }
    }

    package func pendingApprovals(user: String, now: Int64) throws(StoreError) -> [ApprovalRecord] {
        try read { (db) throws(StoreError) in try ApprovalTables.pending(db, user: user, now: now) }
    }

    /// The jti first: a replayed decision changes nothing else. A decision that finds its
    /// approval pending but past its expiry expires it, with its row, in the same transaction.
    package func decideApproval(
        _ decision: ApprovalDecision, audit: @Sendable (ApprovalRecord) -> [AuditEvent], now: Int64
    ) throws(StoreError) -> DecisionResult {
        try write { (db) throws(StoreError) -> DecisionResult in
            let key = try KeyTables.status(db, kid: decision.kid, user: decision.user, host: decision.workstation)
            guard let key else { return .keyRefused(.keyChanged) }
            guard key == .active else { return .keyRefused(.status(key)) }
            guard try KeyTables.claim(db, jti: decision.jti, keepUntil: decision.keepUntil) else { return .replayed }
            if let decided = try ApprovalTables.decide(db, decision, now: now) {
                for row in audit(decided) { try AuditTables.insert(db, row, time: now) }
                try Self.announce(db, decided)
                return .decided(decided)
            }
            guard let found = try ApprovalTables.approval(db, id: decision.id) else { return .unknown }
            guard found.status == .pending else { return .closed(found.status) }
            if let expired = try ApprovalTables.close(db, id: found.id, as: .expired, now: now) {
                try AuditTables.insert(db, ApprovalTables.audit(expired, .approvalExpired), time: now)
                try Self.announce(db, expired)
                return .expired
            }
            // Another instance closed it between the two statements.
            return .closed(try ApprovalTables.approval(db, id: decision.id)?.status ?? .expired)
        }
    }

    /// Only `withdrawn` and `expired`: a decision names its key and workstation
    /// (`decideApproval`).
    package func closeApproval(
        id: String, as status: ApprovalStatus, audit: @Sendable (ApprovalRecord) -> AuditEvent, now: Int64
    ) throws(StoreError) -> ApprovalRecord? {
        guard status == .withdrawn || status == .expired else {
            throw StoreError("an approval is closed as withdrawn or expired, not \(status.rawValue)")
        }
        return try write { (db) throws(StoreError) -> ApprovalRecord? in
            guard let closed = try ApprovalTables.close(db, id: id, as: status, now: now) else { return nil }
            try AuditTables.insert(db, audit(closed), time: now)
            try Self.announce(db, closed)
            return closed
        }
    }

    /// Tells the fleet's other instances that `approval` changed, inside the change's
    /// transaction: PostgreSQL delivers a `NOTIFY` only when the transaction commits (and
    /// never when it rolls back), once per distinct payload. Nothing on SQLite (one instance).
    static func announce(_ db: some SQLConnection, _ approval: ApprovalRecord) throws(StoreError) {
        guard db.dialect.notifiesApprovals else { return }
        let notice = ApprovalNotice(id: approval.id, user: approval.user)
        try db.execute("SELECT pg_notify(?1, ?2)", [.text(ApprovalNotice.channel), .text(notice.payload)])
    }

    package func approvals(user: String?, host: String?, limit: Int) throws(StoreError) -> [ApprovalRecord] {
        try read { (db) throws(StoreError) in try ApprovalTables.list(db, user: user, host: host, limit: limit) }
    }
}

import FingerAuthCore

/// Which TPM a host's attested keys must come from: the SHA-256 of its endorsement key's
/// public key (`EndorsementKeyID`), one per host, in `host_eks`. A pin is made by the admin
/// (`fingerauthd hosts add-ek`, from `fingerauth key ek` on the host) or, when the host has
/// none, by its first successful TPM attestation (trust on first use). Once a host has a
/// pin, an attestation with another EK is refused (`ek_mismatch`); only an admin changes it.
/// The SQL is the same on both stores (`PolicySQL`).

/// How a host's EK pin was made.
public enum EKSource: String, Sendable, Equatable {
    /// Recorded by the host's first attestation: whichever TPM attested first.
    case tofu
    /// Provisioned by an admin from the host's own `fingerauth key ek`.
    case admin
}

/// A host's pinned EK.
public struct EKPin: Sendable, Equatable {
    public var host: String
    /// 64 lowercase hex digits (`EndorsementKeyID`).
    public var ek: String
    public var source: EKSource
    /// When it was pinned, seconds since the epoch.
    public var pinned: Int64
    /// The admin who provisioned it; nil for a pin on first use.
    public var by: String?

    public init(host: String, ek: String, source: EKSource, pinned: Int64, by: String? = nil) {
        self.host = host
        self.ek = ek
        self.source = source
        self.pinned = pinned
        self.by = by
    }

    /// `admin 64db3988…` / `tofu 64db3988…`: how audit rows and tables name it.
    public var summary: String { "\(source.rawValue) \(ek)" }
}

/// A key and its user, as a change that revoked it reports it.
public struct KeyOwner: Sendable, Equatable {
    public var kid: String
    public var user: String

    public init(kid: String, user: String) {
        self.kid = kid
        self.user = user
    }
}

/// An admin's change to a host's pin.
public enum EKPinChange: Sendable, Equatable {
    /// Pins `ek` as provisioned by the admin. Over a pin on first use (of this or another EK)
    /// it replaces it; over another admin's pin only with `replace`.
    case provision(host: String, ek: String, replace: Bool)
    /// Removes the pin: the host's next attestation pins anew.
    case reset(host: String)

    /// The host the change is for.
    public var host: String {
        switch self {
        case let .provision(host, _, _), let .reset(host): return host
        }
    }
}

/// What an admin's change did.
public enum EKPinResult: Sendable, Equatable {
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

enum EKTables {
    static let columns = "host, ek_sha256, source, CAST(pinned AS TEXT), pinned_by"

    static func pin(_ row: [String?]) throws(StoreError) -> EKPin {
        guard row.count == 5, let host = row[0], let ek = row[1], let source = row[2].flatMap(EKSource.init(rawValue:)),
              let pinned = row[3].flatMap({ Int64($0) }) else { throw StoreError("corrupt row in table host_eks") }
        return EKPin(host: host, ek: ek, source: source, pinned: pinned, by: row[4])
    }

    /// The pin of `host`, or nil.
    static func pin(_ db: some PolicySQL, host: String) throws(StoreError) -> EKPin? {
        guard let row = try db.policyRows("SELECT \(columns) FROM host_eks WHERE host = ?1", [host]).first else { return nil }
        return try pin(row)
    }

    /// Every pin, by host.
    static func pins(_ db: some PolicySQL) throws(StoreError) -> [String: EKPin] {
        var out: [String: EKPin] = [:]
        for row in try db.policyRows("SELECT \(columns) FROM host_eks", []) {
            let found = try pin(row)
            out[found.host] = found
        }
        return out
    }

    /// The pin of `host` after trying to pin `ek` on first use: one atomic statement, so of
    /// two instances attesting at once exactly one pins and the other reads its pin.
    /// `created` tells whether this call made it.
    static func pinOnFirstUse(_ db: some PolicySQL, host: String, ek: String,
                              now: Int64) throws(StoreError) -> (pin: EKPin, created: Bool) {
        let inserted = try db.policyRows("""
            INSERT INTO host_eks (host, ek_sha256, source, pinned) VALUES (?1, ?2, 'tofu', CAST(?3 AS BIGINT))
            ON CONFLICT (host) DO NOTHING RETURNING \(columns)
            """, [host, ek, String(now)])
        if let row = inserted.first { return (try pin(row), true) }
        guard let existing = try pin(db, host: host) else { throw StoreError("EK pin of \(host) vanished") }
        return (existing, false)
    }

    /// Applies an admin's `change` in the caller's transaction. Keys of the host attested by
    /// an EK other than the new pin (every attested key, for a reset) are revoked with it.
    static func apply(_ db: some PolicySQL, _ change: EKPinChange, admin: String,
                      now: Int64) throws(StoreError) -> EKPinResult {
        let host = change.host
        let before = try pin(db, host: host)
        var after: EKPin?
        switch change {
        case let .provision(_, ek, replace):
            if let before, before.source == .admin {
                if before.ek == ek { return .unchanged(before) }
                if !replace { return .provisionedOther(before) }
            }
            let rows = try db.policyRows("""
                INSERT INTO host_eks (host, ek_sha256, source, pinned, pinned_by) VALUES (?1, ?2, 'admin', CAST(?3 AS BIGINT), ?4)
                ON CONFLICT (host) DO UPDATE SET ek_sha256 = excluded.ek_sha256, source = 'admin', pinned = excluded.pinned,
                    pinned_by = excluded.pinned_by
                RETURNING \(columns)
                """, [host, ek, String(now), admin])
            guard let row = rows.first else { throw StoreError("no EK pin for \(host) after provisioning") }
            after = try pin(row)
        case .reset:
            guard before != nil else { return .nothingPinned }
            _ = try db.policyRows("DELETE FROM host_eks WHERE host = ?1", [host])
        }
        let revoked = try db.policyRows("""
            UPDATE keys SET status = 'revoked', revoked = CAST(?3 AS BIGINT)
             WHERE host = ?1 AND status <> 'revoked' AND ek_sha256 IS NOT NULL AND (CAST(?2 AS TEXT) IS NULL OR ek_sha256 <> CAST(?2 AS TEXT))
            RETURNING kid, "user"
            """, [host, after?.ek, String(now)])
        let keys = revoked.compactMap { row -> KeyOwner? in
            guard row.count == 2, let kid = row[0], let user = row[1] else { return nil }
            return KeyOwner(kid: kid, user: user)
        }
        return .changed(before: before, after: after, revoked: keys.sorted { $0.kid < $1.kid })
    }

    /// The audit rows of an admin's change: one `ek_pin` row (`by ADMIN: before -> after`)
    /// and an `admin_revoke` row for each key it revoked.
    static func audit(_ result: EKPinResult, _ change: EKPinChange, admin: String, peer: String) -> [AuditEvent] {
        let host = change.host
        var row = AuditEvent(event: "ek_pin", host: host, outcome: "accept", peer: peer)
        switch result {
        case let .changed(before, after, revoked):
            row.reason = "by \(admin): \(before?.summary ?? "(none)") -> \(after?.summary ?? "(none)")"
            return [row] + revoked.map {
                AuditEvent(event: "admin_revoke", user: $0.user, host: host, kid: $0.kid, outcome: "accept",
                           reason: "ek_repinned", peer: peer)
            }
        case let .unchanged(pin):
            row.reason = "by \(admin): unchanged: \(pin.summary)"
        case let .provisionedOther(pin):
            row.outcome = "deny"
            row.reason = "by \(admin): provisioned_other: \(pin.summary)"
        case .nothingPinned:
            row.outcome = "deny"
            row.reason = "by \(admin): nothing_pinned"
        }
        return [row]
    }

    /// The `ek_pin` row of a pin made on first use by the registration `registration`.
    static func firstUseAudit(_ pin: EKPin, registration: AuditEvent) -> AuditEvent {
        AuditEvent(event: "ek_pin", user: registration.user, host: pin.host, kid: registration.kid, jti: registration.jti,
                   outcome: "accept", reason: "tofu: (none) -> \(pin.summary)", peer: registration.peer)
    }
}

extension SQLiteStore {
    public func ekPin(host: String) throws(StoreError) -> EKPin? {
        try read { (db) throws(StoreError) -> EKPin? in try EKTables.pin(db, host: host) }
    }

    public func changeEKPin(_ change: EKPinChange, admin: String, peer: String, now: Int64) throws(StoreError) -> EKPinResult {
        try write { (db) throws(StoreError) -> EKPinResult in
            let result = try EKTables.apply(db, change, admin: admin, now: now)
            for row in EKTables.audit(result, change, admin: admin, peer: peer) { try Self.insertAudit(db, row, time: now) }
            return result
        }
    }
}

extension PostgresStore {
    public func ekPin(host: String) throws(StoreError) -> EKPin? {
        try pool.withConnection { (db) throws(StoreError) -> EKPin? in try EKTables.pin(db, host: host) }
    }

    /// One change at a time per host across instances: the row is locked by the upsert or
    /// the delete, and a registration's pin on first use waits for it.
    public func changeEKPin(_ change: EKPinChange, admin: String, peer: String, now: Int64) throws(StoreError) -> EKPinResult {
        try transaction { (db) throws(StoreError) -> EKPinResult in
            _ = try db.query("SELECT pg_advisory_xact_lock(\(PostgresStore.keyLockClass), hashtext($1))", [.text(change.host)])
            let result = try EKTables.apply(db, change, admin: admin, now: now)
            for row in EKTables.audit(result, change, admin: admin, peer: peer) { try Self.insertAudit(db, row, time: now) }
            return result
        }
    }
}

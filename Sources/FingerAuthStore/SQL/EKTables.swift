import FingerAuthCore
import FingerAuthDomain

/// Which TPM a host's attested keys must come from: the SHA-256 of its endorsement key's
/// public key (`EndorsementKeyID`), one per host, in `host_eks`. A pin is made by the admin
/// (`fingerauthd hosts add-ek`, from `fingerauth key ek` on the host) or, when the host has
/// none, by its first successful TPM attestation (trust on first use). Once a host has a
/// pin, an attestation with another EK is refused (`ek_mismatch`); only an admin changes it.
/// The SQL is the same on both stores (`SQLConnection`).
enum EKTables {
    static let columns = "host, ek_sha256, source, CAST(pinned AS TEXT), pinned_by"

    static func pin(_ row: [String?]) throws(StoreError) -> EKPin {
        guard row.count == 5, let host = row[0], let ek = row[1], let source = row[2].flatMap(EKSource.init(rawValue:)),
            let pinned = row[3].flatMap({ Int64($0) })
        else { throw StoreError("corrupt row in table host_eks") }
        return EKPin(host: host, ek: ek, source: source, pinned: pinned, by: row[4])
    }

    /// The pin of `host`, or nil.
    static func pin(_ db: some SQLConnection, host: String) throws(StoreError) -> EKPin? {
        guard let row = try db.textRows("SELECT \(columns) FROM host_eks WHERE host = ?1", [host]).first else {
            return nil
        }
        return try pin(row)
    }

    /// Every pin, by host.
    static func pins(_ db: some SQLConnection) throws(StoreError) -> [String: EKPin] {
        var out: [String: EKPin] = [:]
        for row in try db.textRows("SELECT \(columns) FROM host_eks", []) {
            let found = try pin(row)
            out[found.host] = found
        }
        return out
    }

    /// The pin of `host` after trying to pin `ek` on first use: one atomic statement, so of
    /// two instances attesting at once exactly one pins and the other reads its pin.
    /// `created` tells whether this call made it.
    static func pinOnFirstUse(
        _ db: some SQLConnection, host: String, ek: String,
        now: Int64
    ) throws(StoreError) -> (pin: EKPin, created: Bool) {
        let inserted = try db.textRows(
            """
            INSERT INTO host_eks (host, ek_sha256, source, pinned) VALUES (?1, ?2, 'tofu', CAST(?3 AS BIGINT))
            ON CONFLICT (host) DO NOTHING RETURNING \(columns)
            """, [host, ek, String(now)])
        if let row = inserted.first { return (try pin(row), true) }
        guard let existing = try pin(db, host: host) else { throw StoreError("EK pin of \(host) vanished") }
        return (existing, false)
    }

    /// Whether an attested key's `ek` may register for `host`: the host's pin, made now on
    /// first use (with its own `ek_pin` audit row beside the `registration`'s), is that EK.
    /// Device keys and host keys alike.
    static func admits(
        _ db: some SQLConnection, host: String, ek: String, registration: AuditEvent, now: Int64
    ) throws(StoreError) -> Bool {
        let (pin, created) = try pinOnFirstUse(db, host: host, ek: ek, now: now)
        guard pin.ek == ek else { return false }
        if created { try AuditTables.insert(db, EKPinResult.firstUseAudit(pin, registration: registration), time: now) }
        return true
    }

    /// Applies an admin's `change` in the caller's transaction. Keys of the host attested by
    /// an EK other than the new pin (every attested key, for a reset) are revoked with it.
    static func apply(
        _ db: some SQLConnection, _ change: EKPinChange, admin: String,
        now: Int64
    ) throws(StoreError) -> EKPinResult {
        let host = change.host
        let before = try pin(db, host: host)
        var after: EKPin?
        switch change {
        case let .provision(_, ek, replace):
            if let before, before.source == .admin {
                if before.ek == ek { return .unchanged(before) }
                if !replace { return .provisionedOther(before) }
            }
            let rows = try db.textRows(
                """
                INSERT INTO host_eks (host, ek_sha256, source, pinned, pinned_by) VALUES (?1, ?2, 'admin', CAST(?3 AS BIGINT), ?4)
                ON CONFLICT (host) DO UPDATE SET ek_sha256 = excluded.ek_sha256, source = 'admin', pinned = excluded.pinned,
                    pinned_by = excluded.pinned_by
                RETURNING \(columns)
                """, [host, ek, String(now), admin])
            guard let row = rows.first else { throw StoreError("no EK pin for \(host) after provisioning") }
            after = try pin(row)
        case .reset:
            guard before != nil else { return .nothingPinned }
            _ = try db.textRows("DELETE FROM host_eks WHERE host = ?1", [host])
        }
        let revoked = try db.textRows(
            """
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
}

import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd hosts keys [--host H]` and `hosts revoke-key (--kid K | --host H)`: the
/// hosts' own keys (what signs their approval requests; `fingerauth host register` on the
/// host). Each revocation writes an `admin_revoke` row naming the kid (reason `host_key`).
enum HostKeyCommands {
    static func list(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "hosts keys"
        let (options, db) = try Admin.options(arguments, valued: ["host"], switches: ["json"], command: command)
        let host = options.optional("host")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let keys = try store.listHostKeys(host: host)
            if options.flag("json") {
                print(
                    JSONEncoding.encode(
                        .array(
                            keys.map { key in
                                .object([
                                    ("kid", .string(key.kid)), ("host", .string(key.host)),
                                    ("status", .string(key.status.rawValue)), ("created", .integer(key.created)),
                                    ("revoked", key.revoked.map(JSONValue.integer) ?? .null),
                                    ("kind", .string(key.kind.rawValue)),
                                    ("ek", key.ek.map(JSONValue.string) ?? .null),
                                ])
                            })))
            } else {
                Admin.printTable(
                    ["KID", "HOST", "STATUS", "KIND", "CREATED", "REVOKED"],
                    keys.map {
                        [
                            $0.kid, LogText.clean($0.host), $0.status.rawValue, $0.kind.rawValue,
                            Admin.utcTime($0.created), $0.revoked.map(Admin.utcTime) ?? "",
                        ]
                    })
            }
            return 0
        }
    }

    static func revoke(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "hosts revoke-key"
        let (options, db) = try Admin.options(arguments, valued: ["kid", "host"], command: command)
        let kid = options.optional("kid")
        let host = options.optional("host")
        guard (kid == nil) != (host == nil) else {
            throw UsageError(
                message: "\(command): give --kid KID (see 'fingerauthd hosts keys') "
                    + "or --host HOST (its active host key)")
        }
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let revoked = try store.revokeHostKeys(kid: kid, host: host, now: now)
            guard !revoked.isEmpty else {
                let known = try kid.map { (k) throws(StoreError) in try store.hostKey(kid: k) } ?? nil
                var event = AuditEvent(
                    event: .adminRevoke, host: (known?.host ?? host).map { LogText.clean($0) },
                    kid: kid.map { LogText.clean($0) }, outcome: .deny, peer: "local")
                if let known, known.status == .revoked {
                    event.outcome = .accept
                    event.reason = .code(.alreadyRevoked)
                    try store.audit(event, now: now)
                    print("\(known.kid) was already revoked")
                    return 0
                }
                event.reason = kid == nil ? .code(.unknownHost) : .token(.unknownKid)
                try store.audit(event, now: now)
                let what =
                    kid.map { "no host key with kid \(LogText.clean($0))" }
                    ?? "no active host key of \(LogText.clean(host ?? ""))"
                printError("fingerauthd: \(command): \(what); see 'fingerauthd hosts keys'")
                return 1
            }
            for key in revoked {
                try store.audit(key.adminRevokeAudit(reason: .hostKey, peer: "local", admin: nil), now: now)
                print("revoked host key \(key.kid) of \(LogText.clean(key.host))")
            }
            return 0
        }
    }
}

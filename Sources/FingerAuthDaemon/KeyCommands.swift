import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd keys list|approve|revoke`: the key registry. Each change is audited
/// (`admin_approve`, `admin_revoke`, peer `local`).
enum KeyCommands {
    static func list(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(
            arguments, valued: ["status", "user"], switches: ["json"], command: "keys list")
        let status = options.optional("status")
        if let status, KeyStatus(rawValue: status) == nil {
            throw UsageError(message: "keys list: --status must be active, pending or revoked")
        }
        let user = options.optional("user")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let keys = try store.listKeys().filter {
                (status == nil || $0.status.rawValue == status) && (user == nil || $0.user == user)
            }
            if options.flag("json") {
                print(
                    JSONEncoding.encode(
                        .array(
                            keys.map { key in
                                .object([
                                    ("kid", .string(key.kid)), ("user", .string(key.user)), ("host", .string(key.host)),
                                    ("status", .string(key.status.rawValue)), ("created", .integer(key.created)),
                                    ("kind", .string(key.kind.rawValue)), ("ek", key.ek.map(JSONValue.string) ?? .null),
                                ])
                            })))
            } else {
                Admin.printTable(
                    ["KID", "USER", "HOST", "STATUS", "CREATED", "KIND", "EK"],
                    keys.map {
                        [
                            $0.kid, $0.user, $0.host, $0.status.rawValue, Admin.utcTime($0.created), $0.kind.rawValue,
                            $0.ek ?? "",
                        ]
                    })
            }
            return 0
        }
    }

    static func approve(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "keys approve"
        let (options, db) = try Admin.options(arguments, valued: ["kid"], command: command)
        let kid = try options.required("kid", command: command)
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let result = try store.approve(kid: kid)
            let key = try store.registeredKey(kid: kid)
            var event = AuditEvent(
                event: .adminApprove, user: key?.user, host: key?.host,
                kid: LogText.clean(kid), outcome: .accept, peer: "local")
            switch result {
            case .approved:
                try store.audit(event, now: now)
                print("approved \(kid)")
                return 0
            case .alreadyActive:
                event.reason = .code(.alreadyActive)
                try store.audit(event, now: now)
                print("\(kid) was already active")
                return 0
            case .revoked, .unknown:
                event.outcome = .deny
                event.reason = .token(result == .revoked ? .keyRevoked : .unknownKid)
                try store.audit(event, now: now)
                let why = result == .revoked ? "is revoked and stays revoked" : "is not registered"
                printError("fingerauthd: keys approve: \(LogText.clean(kid)) \(why); see 'fingerauthd keys list'")
                return 1
            }
        }
    }

    /// `keys revoke --kid KID`, or in bulk `--user U` and/or `--host H`: every active or
    /// pending key that matches, one audit row each.
    static func revoke(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "keys revoke"
        let (options, db) = try Admin.options(arguments, valued: ["kid", "user", "host"], command: command)
        let kid = options.optional("kid")
        let user = options.optional("user")
        let host = options.optional("host")
        guard (kid != nil) != (user != nil || host != nil) else {
            throw UsageError(
                message: "keys revoke: give --kid KID, or --user USER and/or --host HOST to revoke in bulk")
        }
        guard let kid else { return revokeBulk(db, user: user, host: host) }
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let result = try store.revoke(kid: kid, now: now)
            let key = try store.registeredKey(kid: kid)
            var event = AuditEvent(
                event: .adminRevoke, user: key?.user, host: key?.host,
                kid: LogText.clean(kid), outcome: .accept, peer: "local")
            switch result {
            case .revoked:
                try store.audit(event, now: now)
                print("revoked \(kid)")
                return 0
            case .alreadyRevoked:
                event.reason = .code(.alreadyRevoked)
                try store.audit(event, now: now)
                print("\(kid) was already revoked")
                return 0
            case .unknown:
                event.outcome = .deny
                event.reason = .token(.unknownKid)
                try store.audit(event, now: now)
                printError(
                    "fingerauthd: keys revoke: no key with kid \(LogText.clean(kid)); see 'fingerauthd keys list'")
                return 1
            }
        }
    }

    private static func revokeBulk(_ db: String, user: String?, host: String?) -> Int32 {
        Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let keys = try store.revokeKeys(user: user, host: host, now: now)
            for key in keys {
                try store.audit(
                    AuditEvent(
                        event: .adminRevoke, user: key.user, host: key.host, kid: key.kid,
                        outcome: .accept, reason: .code(.bulk), peer: "local"), now: now)
                print("revoked \(key.kid) (\(key.user) on \(key.host))")
            }
            let which = [user.map { "user \(LogText.clean($0))" }, host.map { "host \(LogText.clean($0))" }]
                .compactMap { $0 }.joined(separator: " on ")
            print("revoked \(keys.count) key\(keys.count == 1 ? "" : "s") of \(which)")
            return 0
        }
    }
}

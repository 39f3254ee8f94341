import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd token create|list|revoke`: host enrollment tokens. A token is printed once,
/// at creation; the database and `list` know only its SHA-256 (and a 16-digit id from it).
enum TokenCommands {
    static func create(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "token create"
        let (options, db) = try Admin.options(arguments, valued: ["host"], command: command)
        let host = try options.required("host", command: command)
        guard Names.isValidHost(host) else {
            throw UsageError(
                message: "token create: --host must be 1 to 253 of A-Z a-z 0-9 . _ - (not starting with . or -)")
        }
        return Admin.withStore(db, mustExist: false) { store, now throws(StoreError) in
            let token = try store.createHostToken(host: host, now: now)
            try store.audit(AuditEvent(event: .tokenCreate, host: host, outcome: .accept, peer: "local"), now: now)
            print(token)
            return 0
        }
    }

    static func list(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(arguments, valued: [], switches: ["json"], command: "token list")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let tokens = try store.listHostTokens()
            if options.flag("json") {
                print(
                    JSONEncoding.encode(
                        .array(
                            tokens.map { t in
                                .object(
                                    [
                                        ("id", .string(t.id)), ("host", .string(t.host)),
                                        ("created", .integer(t.created)),
                                        ("status", .string(t.revoked == nil ? "active" : "revoked")),
                                    ]
                                        + (t.revoked.map { [("revoked", JSONValue.integer($0))] } ?? []))
                            })))
            } else {
                Admin.printTable(
                    ["ID", "HOST", "STATUS", "CREATED", "REVOKED"],
                    tokens.map {
                        [
                            $0.id, $0.host, $0.revoked == nil ? "active" : "revoked", Admin.utcTime($0.created),
                            $0.revoked.map(Admin.utcTime) ?? "",
                        ]
                    })
            }
            return 0
        }
    }

    static func revoke(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "token revoke"
        let (options, db) = try Admin.options(arguments, valued: ["id", "host"], command: command)
        let id = options.optional("id")
        let host = options.optional("host")
        guard (id == nil) != (host == nil) else {
            throw UsageError(message: "token revoke: give --id ID (see 'fingerauthd token list') or --host HOST")
        }
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let revocation = try store.revokeHostTokens(id: id, host: host, now: now)
            guard !revocation.hosts.isEmpty || !revocation.keys.isEmpty || !revocation.hostKeys.isEmpty else {
                try store.audit(
                    AuditEvent(
                        event: .tokenRevoke, host: host.map { LogText.clean($0) }, outcome: .deny,
                        reason: .code(.unknownToken), peer: "local"), now: now)
                printError("fingerauthd: token revoke: no active token matches; see 'fingerauthd token list'")
                return 1
            }
            for event in revocation.auditEvents(peer: "local", admin: nil) { try store.audit(event, now: now) }
            let count = revocation.hosts.count
            print("revoked \(count) token\(count == 1 ? "" : "s")")
            if let host {
                let keys = revocation.keys.count
                print(
                    "revoked \(keys) key\(keys == 1 ? "" : "s") of \(LogText.clean(host)) and withdrew "
                        + "\(revocation.accessTokens) access token\(revocation.accessTokens == 1 ? "" : "s") issued to them"
                )
                for key in revocation.hostKeys { print("revoked host key \(key.kid) of \(LogText.clean(host))") }
            }
            return 0
        }
    }
}

import FingerAuthCore
import FingerAuthServer
import FingerAuthSystem
#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd token create`, `keys list`, `keys revoke`: registry administration on the
/// same database the daemon serves (SQLite WAL lets both run at once). Each change is audited.
enum AdminCommands {
    static func tokenCreate(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "token create"
        let options = try Options(arguments, valued: ["host", "db"], command: command)
        let host = try options.required("host", command: command)
        let dbPath = try options.required("db", command: command)
        guard Names.isValidHost(host) else {
            throw UsageError(message: "token create: --host must be 1 to 253 of A-Z a-z 0-9 . _ - (not starting with . or -)")
        }
        umask(0o077)
        return withStore(dbPath, mustExist: false) { store, now throws(StoreError) in
            let token = try store.createHostToken(host: host, now: now)
            try store.audit(AuditEvent(event: "token_create", host: host, outcome: "accept", peer: "local"), now: now)
            print(token)
            return 0
        }
    }

    static func keysList(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "keys list"
        let options = try Options(arguments, valued: ["db"], switches: ["json"], command: command)
        let dbPath = try options.required("db", command: command)
        let json = options.flag("json")
        return withStore(dbPath, mustExist: true) { store, _ throws(StoreError) in
            let keys = try store.listKeys()
            if json {
                print(JSONEncoding.encode(.array(keys.map { key in
                    .object([("kid", .string(key.kid)), ("user", .string(key.user)), ("host", .string(key.host)),
                             ("status", .string(key.status.rawValue)), ("created", .integer(key.created))])
                })))
            } else {
                let rows = [["KID", "USER", "HOST", "STATUS", "CREATED"]] + keys.map {
                    [$0.kid, $0.user, $0.host, $0.status.rawValue, utcTime($0.created)]
                }
                var widths = [Int](repeating: 0, count: 5)
                for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
                for row in rows {
                    let cells = row.enumerated().map { i, cell in
                        i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
                    }
                    print(cells.joined(separator: "  "))
                }
            }
            return 0
        }
    }

    static func keysRevoke(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "keys revoke"
        let options = try Options(arguments, valued: ["kid", "db"], command: command)
        let kid = try options.required("kid", command: command)
        let dbPath = try options.required("db", command: command)
        return withStore(dbPath, mustExist: true) { store, now throws(StoreError) in
            let result = try store.revoke(kid: kid, now: now)
            let user = try store.registeredKey(kid: kid)
            var event = AuditEvent(event: "admin_revoke", user: user?.user, host: user?.host,
                                   kid: LogText.clean(kid), outcome: "accept", peer: "local")
            switch result {
            case .revoked:
                try store.audit(event, now: now)
                print("revoked \(kid)")
                return 0
            case .alreadyRevoked:
                event.reason = "already_revoked"
                try store.audit(event, now: now)
                print("\(kid) was already revoked")
                return 0
            case .unknown:
                event.outcome = "deny"
                event.reason = "unknown_kid"
                try store.audit(event, now: now)
                fputs("fingerauthd: keys revoke: no key with kid \(LogText.clean(kid)); see 'fingerauthd keys list'\n", stderr)
                return 1
            }
        }
    }

    /// Opens the store, runs `body` with the current time, closes; store errors exit 1.
    private static func withStore(_ path: String, mustExist: Bool,
                                  _ body: (AuthStore, Int64) throws(StoreError) -> Int32) -> Int32 {
        if mustExist && !SafeFile.exists(path) {
            fputs("fingerauthd: \(path): no such database; check --db\n", stderr)
            return 1
        }
        do {
            let store = try AuthStore(path: path)
            defer { store.close() }
            return try body(store, WallClock().now())
        } catch {
            fputs("fingerauthd: \(error)\n", stderr)
            return 1
        }
    }

    /// `2025-01-31T12:00:00Z` (gmtime_r + strftime).
    static func utcTime(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return String(seconds) }
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return n > 0 ? String(cString: buffer) : String(seconds)
    }
}

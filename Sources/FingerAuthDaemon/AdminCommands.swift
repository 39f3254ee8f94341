import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd admin create NAME` and `admin list`: the admin console's accounts. An
/// account starts with a one-time setup link (24 hours); only its secret's SHA-256 is
/// stored, and the link is printed once, here.
enum AdminCommands {
    static func create(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "admin create"
        guard let name = arguments.first, !name.hasPrefix("-") else {
            throw UsageError(message: "admin create: give the admin's name: fingerauthd admin create NAME")
        }
        if let problem = UserName.problem(name) {
            throw UsageError(message: "admin create: '\(LogText.clean(name, limit: 64))' is not a name (\(problem)); "
                             + "an admin name follows the user-name rule: \(UserName.rule)")
        }
        let (options, db) = try Admin.options(arguments.dropFirst(), valued: ["console-url"], command: command)
        let base = try consoleURL(options, command: command)
        guard let secret = SecureRandom.bytes(32), let digest = Digest.sha256(secret) else {
            fputs("fingerauthd: admin create: no random bytes\n", stderr)
            return 1
        }
        return Admin.withStore(db, mustExist: false) { store, now throws(StoreError) in
            guard try store.createAdmin(name: name, setupDigest: digest, expires: now + AdminConsoleLifetime.setup, now: now) else {
                fputs("fingerauthd: admin create: an admin named \(name) exists already\n", stderr)
                return 1
            }
            try store.audit(AuditEvent(event: .adminCreate, outcome: .accept, peer: "local", admin: name), now: now)
            print("created admin \(name); the one-time setup link (valid 24 hours, shown only now):")
            print("\(base)/setup?token=\(Base64URL.encode(secret))")
            return 0
        }
    }

    static func list(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (_, db) = try Admin.options(arguments, valued: [], command: "admin list")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            for admin in try store.listAdmins() {
                print("\(admin.name)\t\(admin.ready ? "ready" : "setup pending")")
            }
            return 0
        }
    }

    /// `--console-url`, else `https://` and `admin-listen` of the configuration file.
    static func consoleURL(_ options: Options, command: String) throws(UsageError) -> String {
        if let given = options.optional("console-url") {
            guard given.hasPrefix("https://") || given.hasPrefix("http://") else {
                throw UsageError(message: "\(command): console-url must start with https://")
            }
            return given.hasSuffix("/") ? String(given.dropLast()) : given
        }
        let file = try ConfigFile.load(options.optional("config"), command: command)
        let listen = file["admin-listen"].map { $0.allSatisfy(\.isNumber) ? "127.0.0.1:" + $0 : $0 } ?? "127.0.0.1:8444"
        return "https://" + listen
    }
}

/// How long a setup link lives.
enum AdminConsoleLifetime {
    static let setup: Int64 = 24 * 3600
}

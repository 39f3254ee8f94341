import FingerAuthConsole
import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd admin create NAME`, `admin reset NAME`, `admin remove NAME` and `admin
/// list`: the admin console's accounts. An account starts with a one-time setup link (24
/// hours), and `reset` gives it a new one in place of its password; only the link's
/// secret's SHA-256 is stored, and the link is printed once, here. The console checks the
/// account on every request, so that `reset` and `remove` end the admin's sessions too.
enum AdminCommands {
    static func create(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        guard let (name, db, link, console) = try linkCommand(arguments, command: "admin create", existing: false)
        else {
            return 1
        }
        return Admin.withStore(db, mustExist: false) { store, now throws(StoreError) in
            guard
                try store.createAdmin(
                    name: name, setupDigest: link.digest, expires: now + AdminConsole.setupLifetime, now: now)
            else {
                printError(
                    "fingerauthd: admin create: an admin named \(name) exists already; "
                        + "'fingerauthd admin reset \(name)' gives it a new setup link")
                return 1
            }
            try store.audit(
                Admin.byAdmin(AuditEvent(event: .adminCreate, outcome: .accept, admin: name), Admin.operatorName()),
                now: now)
            print("created admin \(name); the one-time setup link (valid 24 hours, shown only now)\(console.lead)")
            printLink(link, console)
            return 0
        }
    }

    /// Clears the admin's password, which ends their console sessions, and prints a new
    /// setup link; any older link of theirs stops working.
    static func reset(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        guard let (name, db, link, console) = try linkCommand(arguments, command: "admin reset", existing: true)
        else {
            return 1
        }
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            guard try store.resetAdmin(name: name, setupDigest: link.digest, expires: now + AdminConsole.setupLifetime)
            else {
                printError("fingerauthd: admin reset: \(noSuchAdmin(name))")
                return 1
            }
            try store.audit(
                Admin.byAdmin(AuditEvent(event: .adminReset, outcome: .accept, admin: name), Admin.operatorName()),
                now: now)
            print(
                "reset admin \(name): password cleared, console sessions ended; "
                    + "the one-time setup link (valid 24 hours, shown only now)\(console.lead)")
            printLink(link, console)
            return 0
        }
    }

    /// Deletes the admin, which ends their console sessions. The last admin may go too:
    /// the console is a convenience over these commands, and `admin create` makes a new one.
    static func remove(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "admin remove"
        let name = try adminName(arguments, command: command)
        let (_, db) = try Admin.options(arguments.dropFirst(), valued: [], command: command)
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            guard try store.removeAdmin(name: name) else {
                printError("fingerauthd: admin remove: \(noSuchAdmin(name))")
                return 1
            }
            try store.audit(
                Admin.byAdmin(AuditEvent(event: .adminRemove, outcome: .accept, admin: name), Admin.operatorName()),
                now: now)
            print("removed admin \(name); their console sessions ended")
            if try store.listAdmins().isEmpty {
                printError(
                    "fingerauthd: admin remove: no console admin is left; 'fingerauthd admin create NAME' makes one")
            }
            return 0
        }
    }

    /// What `create` and `reset` read before they open the store: the admin's name, the
    /// database, the console's address and a new setup link under it; nil (said why) without
    /// random bytes.
    private static func linkCommand(
        _ arguments: ArraySlice<String>, command: String,
        existing: Bool
    ) throws(UsageError) -> (String, String, SetupLink, ConsoleLink)? {
        let name = try adminName(arguments, command: command, existing: existing)
        let (options, db) = try Admin.options(arguments.dropFirst(), valued: ["console-url"], command: command)
        let console = try ConsoleLink(options, command: command)
        guard let link = SetupLink(base: console.base) else {
            printError("fingerauthd: \(command): no random bytes")
            return nil
        }
        return (name, db, link, console)
    }

    /// What turns the console on when it is off, then the link (the last line: scripts read it).
    private static func printLink(_ link: SetupLink, _ console: ConsoleLink) {
        for line in console.toTurnOn { print(line) }
        print(link.url)
    }

    /// The NAME that follows the command: a new account's by the user-name rule; an existing
    /// one's (`existing`) by the looser rule sign-in looks names up by, so that an account
    /// made before the rule (`fingerauthd doctor` lists them) can be reset or removed.
    private static func adminName(
        _ arguments: ArraySlice<String>, command: String,
        existing: Bool = true
    ) throws(UsageError) -> String {
        guard let name = arguments.first, !name.hasPrefix("-") else {
            throw UsageError(message: "\(command): give the admin's name: fingerauthd \(command) NAME")
        }
        if existing {
            guard Names.isAdminLookup(name) else {
                throw UsageError(
                    message: "\(command): '\(LogText.clean(name, limit: 64))' is not an admin's name "
                        + "(letters, digits, '.', '_' and '-', at most 64 bytes)")
            }
        } else if let problem = UserName.problem(name) {
            throw UsageError(
                message: "\(command): '\(LogText.clean(name, limit: 64))' is not a name (\(problem)); "
                    + "an admin name follows the user-name rule: \(UserName.rule)")
        }
        return name
    }

    private static func noSuchAdmin(_ name: String) -> String {
        "no admin named \(name); 'fingerauthd admin list' names them, 'fingerauthd admin create \(name)' makes one"
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
}

/// A new setup link under the console's `base` URL: 32 random bytes, of which the store
/// keeps only the SHA-256 (`digest`) and the admin sees the rest once (`url`).
struct SetupLink {
    let digest: [UInt8]
    let url: String

    init?(base: String) {
        guard let secret = SecureRandom.bytes(32), let digest = Digest.sha256(secret) else { return nil }
        self.digest = digest
        url = "\(base)/setup?token=\(Base64URL.encode(secret))"
    }
}

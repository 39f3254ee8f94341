import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The offline-grant keys `serve` signs with (`grant-key`) and still publishes during a
/// rotation (`grant-key-previous`): FingerAuthCrypto's P-256 keys as the service's signer.
struct GrantKeys: GrantSigner {
    let current: GrantSigningKey
    let previous: GrantSigningKey?

    var keyID: String { current.kid }

    func signES256(_ data: [UInt8]) -> [UInt8]? { current.signES256(data) }

    var publishedKeys: [(kid: String, key: GrantKeyJWK)] {
        [(current.kid, current.publicKey)] + (previous.map { [($0.kid, $0.publicKey)] } ?? [])
    }

    /// The keys of `grant-key` and `grant-key-previous` (each owned by this user, not
    /// readable by group or others); nil without `grant-key`.
    static func load(current: String?, previous: String?, command: String) throws(UsageError) -> GrantKeys? {
        guard let current else {
            if previous != nil { throw UsageError(message: "\(command): grant-key-previous needs grant-key") }
            return nil
        }
        let signing = try key(current, option: "grant-key", command: command)
        let earlier = try previous.map { (path) throws(UsageError) in
            try key(path, option: "grant-key-previous", command: command)
        }
        if let earlier, earlier.kid == signing.kid {
            throw UsageError(message: "\(command): grant-key-previous is the same key as grant-key")
        }
        return GrantKeys(current: signing, previous: earlier)
    }

    private static func key(_ path: String, option: String, command: String) throws(UsageError) -> GrantSigningKey {
        var bytes: [UInt8]
        do {
            bytes = try SafeFile.read(
                path, rule: FileRule(owner: UInt32(geteuid()), forbiddenBits: 0o077, maxBytes: 64 * 1024))
        } catch {
            throw UsageError(message: "\(command): \(option): \(error)")
        }
        defer { wipe(&bytes) }
        do {
            return try GrantSigningKey(pem: bytes)
        } catch {
            throw UsageError(message: "\(command): \(option): \(path): not an unencrypted EC P-256 private key")
        }
    }
}

/// `fingerauthd grants new-key|list|withdraw`.
enum GrantCommands {
    /// `grants new-key --out FILE [--force]`: a new P-256 grant key, 0600, and its kid.
    static func newKey(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "grants new-key"
        let options = try Options(arguments, valued: ["out"], switches: ["force"], command: command)
        let path = try options.required("out", command: command)
        if SafeFile.exists(path) && !options.flag("force") {
            printError("fingerauthd: \(command): \(path) exists; --force replaces it (hosts then need the new key)")
            return 1
        }
        do {
            let key = try GrantSigningKey.generate()
            var pem = try key.pkcs8PEM()
            defer { wipe(&pem) }
            try SafeFile.writeAtomically(path, pem, mode: 0o600)
            print("grant key \(key.kid) written to \(path)")
            return 0
        } catch {
            printError("fingerauthd: \(command): \(error)")
            return 1
        }
    }

    /// `grants list [--host H] [--json]`: the live grants, newest first.
    static func list(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let (options, db) = try Admin.options(arguments, valued: ["host"], switches: ["json"], command: "grants list")
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let grants = try store.liveGrants(host: options.optional("host"), now: now)
            if options.flag("json") {
                print(JSONEncoding.encode(.array(grants.map(json))))
            } else {
                Admin.printTable(
                    ["HOST", "USER", "KID", "GRANT", "ISSUED", "NOT AFTER", "USES", "SERVICES", "RULE"],
                    grants.map {
                        [
                            $0.host, $0.user, $0.kid, $0.gid, Admin.utcTime($0.issued), Admin.utcTime($0.notAfter),
                            String($0.uses), $0.services.joined(separator: ","), String($0.rule),
                        ]
                    })
            }
            return 0
        }
    }

    /// `grants withdraw --host H [--user U]`: the host's (user's) live grants end; hosts drop
    /// them at their next contact.
    static func withdraw(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "grants withdraw"
        let (options, db) = try Admin.options(arguments, valued: ["host", "user"], command: command)
        let host = try options.required("host", command: command)
        let user = options.optional("user")
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let count = try store.withdrawGrants(
                host: host, user: user, admin: Admin.operatorName(), peer: "local", now: now)
            print("withdrew \(count) grant\(count == 1 ? "" : "s") of \(host)\(user.map { " for " + $0 } ?? "")")
            return 0
        }
    }

    static func json(_ grant: IssuedGrant) -> JSONValue {
        .object([
            ("gid", .string(grant.gid)), ("host", .string(grant.host)), ("user", .string(grant.user)),
            ("kid", .string(grant.kid)), ("issued", .integer(grant.issued)), ("not_after", .integer(grant.notAfter)),
            ("uses", .integer(Int64(grant.uses))), ("services", .array(grant.services.map(JSONValue.string))),
            ("rule", .integer(grant.rule)),
        ])
    }
}

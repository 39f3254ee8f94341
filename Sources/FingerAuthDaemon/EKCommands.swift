import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd hosts add-ek HOST HASH [--replace]` and `hosts reset-ek HOST`: the TPM
/// endorsement key a host's attested keys must come from (`EKPins`). Each change is one
/// transaction with its audit rows: `ek_pin` (peer `local`, reason `by ADMIN: before ->
/// after`) and `admin_revoke` (reason `ek_repinned`) for each key attested by an EK that is
/// no longer the host's.
enum EKCommands {
    static func add(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "hosts add-ek"
        let positional = Array(arguments.prefix { !$0.hasPrefix("-") })
        guard positional.count == 2 else {
            throw UsageError(
                message: "\(command): give the host and its EK: fingerauthd hosts add-ek HOST HASH "
                    + "(HASH: what 'fingerauth key ek' prints on the host)")
        }
        let host = try hostName(positional[0], command: command)
        guard let ek = EndorsementKeyID.normalized(positional[1]) else {
            throw UsageError(
                message: "\(command): '\(LogText.clean(positional[1]))' is not an EK hash: 64 hex digits, "
                    + "as 'fingerauth key ek' prints them")
        }
        let (options, db) = try Admin.options(
            arguments.dropFirst(2), valued: [], switches: ["replace"], command: command)
        return change(db, .provision(host: host, ek: ek, replace: options.flag("replace")))
    }

    static func reset(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "hosts reset-ek"
        guard let first = arguments.first, !first.hasPrefix("-") else {
            throw UsageError(message: "\(command): give the host: fingerauthd hosts reset-ek HOST")
        }
        let host = try hostName(first, command: command)
        let (_, db) = try Admin.options(arguments.dropFirst(), valued: [], command: command)
        return change(db, .reset(host: host))
    }

    private static func hostName(_ text: String, command: String) throws(UsageError) -> String {
        guard Names.isValidHost(text) else {
            throw UsageError(message: "\(command): '\(LogText.clean(text))' is not a host name")
        }
        return text
    }

    private static func change(_ db: String, _ change: EKPinChange) -> Int32 {
        let admin = Admin.operatorName()
        return Admin.withStore(db, mustExist: true) { store, now throws(StoreError) in
            let result = try store.changeEKPin(change, admin: admin, peer: "local", now: now)
            switch result {
            case let .changed(before, after, revoked):
                print("EK of \(change.host): \(before?.summary ?? "(none)") -> \(after?.summary ?? "(none)")")
                for key in revoked {
                    print("revoked \(key.kid) (\(key.user) on \(change.host)): attested by another EK")
                }
                if after == nil { print("the next TPM attestation of \(change.host) pins its EK (trust on first use)") }
                return 0
            case let .unchanged(pin):
                print("EK of \(change.host) was already provisioned: \(pin.ek)")
                return 0
            case let .provisionedOther(pin):
                printError(
                    "fingerauthd: \(change.host) has another EK provisioned by an admin (\(pin.ek)); "
                        + "add --replace to replace it (keys attested by it are then revoked)")
                return 1
            case .nothingPinned:
                printError("fingerauthd: \(change.host) has no EK pinned; see 'fingerauthd hosts list'")
                return 1
            }
        }
    }

    /// A pin as `hosts list --json` shows it; null for none.
    static func json(_ pin: EKPin?) -> JSONValue {
        guard let pin else { return .null }
        return .object([
            ("sha256", .string(pin.ek)), ("source", .string(pin.source.rawValue)),
            ("pinned", .integer(pin.pinned)), ("by", pin.by.map(JSONValue.string) ?? .null),
        ])
    }
}

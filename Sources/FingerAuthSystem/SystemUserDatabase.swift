import CSystem
import FingerAuthCore

/// The system's user database (NSS: `/etc/passwd`, SSSD, LDAP…), the one wrapper every
/// program uses. Reentrant calls only (`getpwnam_r`, `getpwuid_r`): the module runs inside
/// hosts whose other threads may look users up too. Bounded: the entry's buffer starts at
/// `initialBufferBytes` and doubles on `ERANGE` up to `maxBufferBytes`; an entry larger
/// than that is a failure, never an unbounded allocation.
package struct SystemUserDatabase: Sendable {
    /// One account as NSS gave it.
    package struct Account: Equatable, Sendable {
        package var name: String
        package var uid: UInt32
        package var gid: UInt32
    }

    /// What a lookup found.
    package enum Lookup: Equatable, Sendable {
        case found(Account)
        case notFound
        /// NSS failed (a directory unreachable, an entry larger than the cap…): the errno.
        case failed(errno: Int32)
    }

    package let initialBufferBytes: Int
    package let maxBufferBytes: Int

    /// Longest account name kept; longer ones are cut (no valid user name is that long).
    static let maxNameBytes = 256

    package init(initialBufferBytes: Int = 16 * 1024, maxBufferBytes: Int = 1024 * 1024) {
        self.maxBufferBytes = max(1, maxBufferBytes)
        self.initialBufferBytes = min(max(1, initialBufferBytes), self.maxBufferBytes)
    }

    /// The account named `name` (compared by NSS); a name with a NUL byte names nobody.
    package func account(named name: String) -> Lookup {
        guard !name.utf8.contains(0) else { return .notFound }
        return lookup { entry, buffer, size, result in getpwnam_r(name, &entry, buffer, size, &result) }
    }

    /// The account of `uid`.
    package func account(uid: UInt32) -> Lookup {
        lookup { entry, buffer, size, result in getpwuid_r(uid_t(uid), &entry, buffer, size, &result) }
    }

    /// Whether NSS knows `user`; a failed lookup counts as unknown (deny by default).
    package func exists(_ user: String) -> Bool {
        if case .found = account(named: user) { return true }
        return false
    }

    /// The uid of `user`, or nil when NSS does not know the name (or failed).
    package func uid(of user: String) -> UInt32? {
        if case let .found(account) = account(named: user) { return account.uid }
        return nil
    }

    /// The name of `uid`, or nil when NSS does not know it (or failed).
    package func name(of uid: UInt32) -> String? {
        if case let .found(account) = account(uid: uid) { return account.name }
        return nil
    }

    /// getpwnam_r or getpwuid_r with its entry, buffer, buffer size and result.
    private typealias Call = (
        inout passwd, UnsafeMutablePointer<CChar>, Int,
        inout UnsafeMutablePointer<passwd>?
    ) -> Int32

    private func lookup(_ call: Call) -> Lookup {
        var size = initialBufferBytes
        var interruptions = 0
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let rc: Int32
            let found: Lookup
            (rc, found) = buffer.withUnsafeMutableBufferPointer { storage -> (Int32, Lookup) in
                guard let base = storage.baseAddress else { return (ENOMEM, .failed(errno: ENOMEM)) }
                var entry = passwd()
                var result: UnsafeMutablePointer<passwd>?
                let rc = call(&entry, base, storage.count, &result)
                // The entry's strings live in `buffer`: read them before it goes.
                guard rc == 0, result != nil, let name = entry.pw_name else { return (rc, .notFound) }
                let account = Account(
                    name: SystemUserDatabase.string(name, limit: SystemUserDatabase.maxNameBytes),
                    uid: UInt32(entry.pw_uid), gid: UInt32(entry.pw_gid))
                return (0, .found(account))
            }
            switch rc {
            case 0: return found
            // Some NSS modules say "no such user" with an fa_errno() instead of a nil result.
            case ENOENT, ESRCH: return .notFound
            case ERANGE:
                guard size < maxBufferBytes else { return .failed(errno: ERANGE) }
                size = size > maxBufferBytes / 2 ? maxBufferBytes : size * 2
            case EINTR:
                interruptions += 1
                guard interruptions <= 3 else { return .failed(errno: EINTR) }
            default: return .failed(errno: rc)
            }
        }
    }

    /// A C string of at most `limit` bytes, invalid UTF-8 replaced.
    private static func string(_ p: UnsafePointer<CChar>, limit: Int) -> String {
        let length = fa_strnlen(p, limit)
        return p.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

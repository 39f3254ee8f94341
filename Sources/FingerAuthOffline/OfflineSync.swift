import FingerAuthCore

/// A host's offline sync with the authenticator, `POST /v1/offline-sync`: which of its
/// users' grants still stand, and the offline logins recorded since the last upload. The
/// login helper sends it as its warm-up request when there is anything to sync; `fingerauth
/// sync` (a timer) sends it for every user.
package enum OfflineSync {
    /// The sync URL beside a login URL: its last path segment `login` becomes `offline-sync`
    /// (`…/v1/login` → `…/v1/offline-sync`); nil when the login URL does not end so.
    package static func url(forLogin login: String) -> String? {
        let path = login.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard path.hasSuffix("/login") else { return nil }
        return String(path.dropLast("login".utf8.count)) + "offline-sync"
    }

    /// The grants (by gid) and unsent records of `books`; nil when there is nothing to sync.
    package static func body(_ books: [OfflineBook]) -> [UInt8]? {
        var gids: [JSONValue] = []
        var lines: [JSONValue] = []
        for book in books {
            if case let .success(receipt?) = book.receipt(), let gid = receipt.gid {
                gids.append(.string(gid))
            }
            lines += book.unsent(limit: OfflineRecord.maxPerUpload - lines.count).map { .string($0.line) }
        }
        guard !gids.isEmpty || !lines.isEmpty else { return nil }
        return JSONEncoding.encodeBytes(.object([("grants", .array(gids)), ("records", .array(lines))]))
    }

    /// Applies a 200 answer: a withdrawn grant is dropped, the records the authenticator names
    /// one by one in `held` or `rejected` (`{kid: [seq…]}`: it holds them, or will never
    /// take them) are marked sent, and the grant keys it names are pinned. What it says no
    /// more about is left as it is: a record not named is sent again at the next contact.
    package static func apply(_ answer: JSONValue, books: [OfflineBook], pins: GrantPins) {
        let states = answer["grants"]
        let named = [answer["held"], answer["rejected"]]
        for book in books {
            if case let .success(receipt?) = book.receipt(), let gid = receipt.gid,
                states?[gid]?.stringValue == "withdrawn"
            {
                book.drop()
            }
            for kid in Set(book.records().map(\.record.kid)) {
                let seqs = named.flatMap { $0?[kid]?.arrayValue ?? [] }.compactMap(\.int64Value)
                book.markSent(kid: kid, seqs: seqs)
            }
        }
        if let keys = answer["grant_keys"] { try? pins.pin(keys) }
    }
}

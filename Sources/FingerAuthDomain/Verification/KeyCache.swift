import FingerAuthCore
import FingerAuthKeyFormats
import Synchronization

/// Registered keys by kid, with their parsed public keys, in front of a `KeyDirectory`.
///
/// A kid is the RFC 7638 thumbprint of its key, so the key material behind a kid never
/// changes: it is kept. The binding (user, host) and the status are kept as read but only
/// as a first answer — the write transaction of every login reads them again: an active key
/// is read afresh after `refreshSeconds`, a pending one every time (an approval counts at
/// once), a revoked one never again (revocation is final). Unknown kids are never cached (a flood of made-up kids
/// cannot fill memory). At most `capacity` entries; when full, the cache starts over.
package final class KeyCache: Sendable {
    struct Entry: Sendable {
        let key: RegisteredKey
        let publicKey: any SignatureKey
        let read: Int64
    }

    let directory: any KeyDirectory
    /// Parses the public keys (and a proof's key, for the verifier).
    let crypto: any AuthenticatorCrypto
    let capacity: Int
    let refreshSeconds: Int64
    private let entries = Mutex<[String: Entry]>([:])

    package init(
        _ directory: any KeyDirectory, crypto: any AuthenticatorCrypto, capacity: Int = 10_000,
        refreshSeconds: Int64 = 5
    ) {
        self.directory = directory
        self.crypto = crypto
        self.capacity = max(1, capacity)
        self.refreshSeconds = refreshSeconds
    }

    /// The key registered under `kid` and its parsed public key (nil for a key the registry
    /// holds but that cannot be used), or nil when none is registered. `kid` must already
    /// be a well-formed kid (`TokenVerifier.isWellFormedKid`).
    /// `fresh`: the key's status and binding read from the registry whatever is cached (a
    /// call that no write transaction checks again: a watch).
    func lookup(_ kid: String, now: Int64, fresh: Bool = false) throws(StoreError) -> (
        RegisteredKey, (any SignatureKey)?
    )? {
        let cached = entries.withLock { $0[kid] }
        // Revoked is final; active is checked again by the write transaction anyway; a pending
        // key is read afresh every time, so an approval counts at once.
        if let cached, !fresh,
            cached.key.status == .revoked || (cached.key.status == .active && now - cached.read < refreshSeconds)
        {
            return (cached.key, cached.publicKey)
        }
        guard let key = try directory.registeredKey(kid: kid) else { return nil }
        guard let publicKey = cached?.publicKey ?? crypto.signatureKey(key.jwk) else { return (key, nil) }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[kid] = Entry(key: key, publicKey: publicKey, read: now)
        }
        return (key, publicKey)
    }

    /// Forgets what is known of `kid` (after a write transaction saw it change).
    func forget(_ kid: String) {
        entries.withLock { $0[kid] = nil }
    }
}

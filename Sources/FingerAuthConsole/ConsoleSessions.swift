import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import Synchronization

/// Signed-in admins of one console listener, in this process's memory only: a session
/// cookie works on the listener that made it and nowhere else, and ends with sign-out, its
/// idle timeout, its absolute timeout, the process, or a change of the account in the
/// registry (`admin reset`, `admin remove`: the console compares `passwordHash` with the
/// account's on every request).
package final class ConsoleSessions: Sendable {
    package struct Session: Sendable {
        package let admin: String
        /// The account's password hash at sign-in: another one (or none) in the registry
        /// means the account was reset or removed since.
        package let passwordHash: String
        /// The token every form of this session carries (CSRF).
        package let csrf: String
        package let created: Int64
        package var lastSeen: Int64
    }

    let idleSeconds: Int64
    let absoluteSeconds: Int64
    /// At most this many live sessions; the oldest goes first.
    package static let capacity = 256
    private let sessions = Mutex<[String: Session]>([:])

    package init(idleSeconds: Int64, absoluteSeconds: Int64) {
        self.idleSeconds = idleSeconds
        self.absoluteSeconds = absoluteSeconds
    }

    /// A new session for `admin`, signed in with the password of `passwordHash`: its cookie value.
    package func open(admin: String, passwordHash: String, now: Int64) -> String? {
        guard let id = SecureRandom.bytes(32), let csrf = SecureRandom.bytes(24) else { return nil }
        let cookie = Base64URL.encode(id)
        sessions.withLock { sessions in
            sessions = sessions.filter {
                now - $0.value.lastSeen <= idleSeconds && now - $0.value.created <= absoluteSeconds
            }
            if sessions.count >= Self.capacity, let oldest = sessions.min(by: { $0.value.created < $1.value.created }) {
                sessions[oldest.key] = nil
            }
            sessions[cookie] = Session(
                admin: admin, passwordHash: passwordHash, csrf: Base64URL.encode(csrf),
                created: now, lastSeen: now)
        }
        return cookie
    }

    /// The live session of `cookie`, its idle clock restarted.
    package func find(_ cookie: String?, now: Int64) -> Session? {
        guard let cookie, cookie.utf8.count == 43 else { return nil }
        return sessions.withLock { sessions -> Session? in
            guard var session = sessions[cookie] else { return nil }
            guard now - session.lastSeen <= idleSeconds, now - session.created <= absoluteSeconds else {
                sessions[cookie] = nil
                return nil
            }
            session.lastSeen = now
            sessions[cookie] = session
            return session
        }
    }

    package func close(_ cookie: String) {
        sessions.withLock { $0[cookie] = nil }
    }
}

/// Console attempts (sign-ins, setup links) counted per address and per admin name: past
/// `limit` in `window` seconds, the console answers 429 without hashing anything. In
/// memory for a store of this process (SQLite); in the database for one that instances
/// share (PostgreSQL's `rate_counters`, keys `console:…`), so that a fleet of N instances
/// gives a guesser `limit` attempts, not N times as many.
///
/// An attempt is counted when it is admitted, before its password is hashed, and taken
/// back when it succeeds: checking first and counting only after the hash would let every
/// request already in flight through (eight connections, eight hashes past the limit).
package final class SignInLimiter: Sendable {
    let limit: Int
    let window: Int64
    /// The store that counts for every instance, when it shares counts.
    let shared: (any FailureCounts)?
    private let failures = Mutex<[String: (count: Int, start: Int64)]>([:])

    package init(limit: Int = 5, window: Int64 = 300, store: (any FailureCounts)? = nil) {
        self.limit = limit
        self.window = window
        shared = store.flatMap { $0.sharesFailureCounts ? $0 : nil }
    }

    /// False when any of `keys` is past its limit; else counts one attempt against each
    /// key (as a failure until `succeeded` takes it back) and returns true. A shared count
    /// that cannot be reached throws (the caller answers 503: fail closed).
    package func admit(_ keys: [String], now: Int64) throws(StoreError) -> Bool {
        if let shared {
            // Counted first, each key in one statement: past the limit is the count after it.
            // An attempt refused here stays counted, which moves no window's end.
            var admitted = true
            for key in keys where try shared.countAttempt(key: "console:" + key, now: now, window: window) > limit {
                admitted = false
            }
            return admitted
        }
        return failures.withLock { failures -> Bool in
            let blocked = keys.contains { key in
                guard let entry = failures[key], now - entry.start < window else { return false }
                return entry.count >= limit
            }
            if blocked { return false }
            if failures.count > 10_000 { failures = failures.filter { now - $0.value.start < window } }
            for key in keys {
                if let entry = failures[key], now - entry.start < window {
                    failures[key] = (entry.count + 1, entry.start)
                } else {
                    failures[key] = (1, now)
                }
            }
            return true
        }
    }

    /// Takes back the attempt `admit` counted: it was not a failure. A shared count that
    /// cannot be reached keeps it (one failure too many, never one too few).
    package func succeeded(_ keys: [String], now: Int64) {
        if let shared {
            for key in keys { try? shared.takeBackAttempt(key: "console:" + key, now: now) }
            return
        }
        failures.withLock { failures in
            for key in keys {
                guard let entry = failures[key], now - entry.start < window else { continue }
                failures[key] = entry.count > 1 ? (entry.count - 1, entry.start) : nil
            }
        }
    }
}

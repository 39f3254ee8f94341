import CMicroHTTPD
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

#if canImport(Glibc)
import Glibc
#endif

/// Simultaneous connections per client address (`max-connections-per-address`), counted
/// as every other limit counts an address: IPv4 whole, IPv6 by its /64
/// (`ClientAddress.limitKey`). libmicrohttpd's own per-IP limit compares whole addresses,
/// and one host commonly holds a whole /64: it could open the cap's worth of connections
/// from each of its addresses. Trusted proxies are exempt (every client behind them shares
/// their address), as they are from the connection rate.
///
/// Asked twice: at the accept (`hasRoom`, before anything is allocated for the connection),
/// and exactly, under one lock, when libmicrohttpd announces the connection (`open`):
/// accepts on several worker threads at once can all find room, and the ones past the cap
/// are then shut down before their TLS handshake. A refused address is logged at most once
/// a minute; /metrics counts every refusal.
///
/// `@unchecked Sendable`: libmicrohttpd's threads ask it at accept and close. `open` and
/// `logged` change only under `lock`; the rest is set in `init`.
package final class ConnectionCap: @unchecked Sendable {
    package let limit: Int
    private let exempt: [Network]
    private let metrics: Metrics?
    private let log: @Sendable (String) -> Void
    private let lock = Lock()
    private var open: [[UInt8]: Int] = [:]
    /// When a refusal was last logged (monotonic seconds).
    private var logged = -Double.infinity

    /// `limit` connections per address at once; 0: no cap.
    package init(
        limit: Int, exempt: [Network] = [], metrics: Metrics? = nil,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.limit = max(0, limit)
        self.exempt = exempt
        self.metrics = metrics
        self.log = log
    }

    /// The key `address` (4 or 16 bytes) is counted under; nil when it is not counted (no
    /// cap, or a trusted proxy).
    package func key(_ address: [UInt8]) -> [UInt8]? {
        guard limit > 0, !exempt.contains(where: { $0.contains(address) }) else { return nil }
        return ClientAddress.limitKey(address)
    }

    /// Whether `address` holds fewer connections than the cap (at the accept).
    package func hasRoom(_ address: [UInt8], now: Double) -> Bool {
        guard let key = key(address) else { return true }
        let full = lock.withLock { (open[key] ?? 0) >= limit }
        if full { refused(key, now: now) }
        return !full
    }

    /// Counts a connection of `key`; false when it is one past the cap (the caller shuts it
    /// down; it is counted until `close`, like any other).
    package func open(_ key: [UInt8], now: Double) -> Bool {
        let count = lock.withLock { () -> Int in
            let count = (open[key] ?? 0) + 1
            open[key] = count
            return count
        }
        if count > limit { refused(key, now: now) }
        return count <= limit
    }

    /// The connection of `key` closed.
    package func close(_ key: [UInt8]) {
        lock.withLock {
            let left = (open[key] ?? 1) - 1
            open[key] = left > 0 ? left : nil
        }
    }

    /// Connections counted now for `address` (tests).
    package func count(_ address: [UInt8]) -> Int {
        guard let key = key(address) else { return 0 }
        return lock.withLock { open[key] ?? 0 }
    }

    private func refused(_ key: [UInt8], now: Double) {
        metrics?.connectionCapped()
        let due = lock.withLock { () -> Bool in
            guard now - logged >= ConnectionRateLimit.logInterval else { return false }
            logged = now
            return true
        }
        if due {
            log(
                "refusing connections from \(ClientAddress.text(key)): it holds \(limit) already "
                    + "(max-connections-per-address; IPv6 counted by /64); counted in /metrics, logged again in a minute at most"
            )
        }
    }
}

/// What libmicrohttpd's accept policy asks (MHD_AcceptPolicyCallback's closure): the
/// simultaneous cap, then the rate of new connections.
///
/// `@unchecked Sendable`: two `let`s set in `init`, both thread-safe limits.
final class Admission: @unchecked Sendable {
    let cap: ConnectionCap
    let rate: ConnectionRateLimit

    init(cap: ConnectionCap, rate: ConnectionRateLimit) {
        self.cap = cap
        self.rate = rate
    }

    func admit(_ address: [UInt8], now: Double) -> Bool {
        guard cap.hasRoom(address, now: now) else { return false }
        return rate.admit(address, now: now)
    }
}

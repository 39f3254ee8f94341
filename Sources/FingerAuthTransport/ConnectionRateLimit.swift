import CMicroHTTPD
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

#if canImport(Glibc)
import Glibc
#endif

/// New connections per client address, limited before the TLS handshake.
///
/// A handshake costs fingerauthd far more than it costs the client: measured on a 2-core
/// VM, about 6 ms of server CPU for an RSA-2048 certificate (GnuTLS's constant-time RSA
/// signature and the key exchange), against a fraction of that for the client. The caps on
/// simultaneous connections and the head deadline bound how many connections an address
/// holds and for how long, not how often it opens new ones: one address that connects and
/// drops in a loop could keep every core busy with handshakes. This token bucket — `rate`
/// new connections a second, up to `burst` at once — is asked by libmicrohttpd at each
/// accept (MHD_AcceptPolicyCallback), before any TLS: past it the socket is closed at once,
/// so one address gets at most `rate` handshakes a second.
///
/// Addresses are counted as the other limits count them (IPv4 whole, IPv6 by its /64).
/// `trusted-proxies` are exempt: every client behind them shares their address. The table
/// holds at most `capacity` addresses; addresses whose bucket is full carry no state and
/// are dropped when it is full (a sweep at most once a second); when it is full of active
/// addresses, new ones are let through (the limit is against one address, not a crowd). A refused address is logged at most
/// once a minute (`logInterval`), however it floods; /metrics counts every refusal.
///
/// `@unchecked Sendable`: libmicrohttpd's threads ask it at every accept. `buckets` and
/// `lastSweep` change only under `lock`; the rest is set in `init`.
package final class ConnectionRateLimit: @unchecked Sendable {
    /// New connections a second per address, and how many may come at once. A rate of 0
    /// turns the limit off.
    package struct Limit: Sendable, Equatable {
        package var rate: Double
        package var burst: Double
        package init(rate: Double, burst: Double) {
            self.rate = rate
            self.burst = burst
        }
        package static let off = Limit(rate: 0, burst: 0)
    }

    private struct Bucket {
        var tokens: Double
        var updated: Double
        /// When this address's last refusal was logged (monotonic seconds), if ever.
        var logged: Double?
    }

    /// Seconds between two log lines about one address.
    static let logInterval = 60.0

    let limit: Limit
    let capacity: Int
    private let exempt: [Network]
    private let metrics: Metrics?
    private let log: @Sendable (String) -> Void
    private let lock = Lock()
    private var buckets: [[UInt8]: Bucket] = [:]
    /// When the full table was last swept of idle addresses: at most once a second, so that
    /// a crowd of new addresses cannot make every accept walk the whole table.
    private var lastSweep = -Double.infinity

    package init(
        _ limit: Limit, exempt: [Network] = [], capacity: Int = 16_384, metrics: Metrics? = nil,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.limit = limit
        self.capacity = max(1, capacity)
        self.exempt = exempt
        self.metrics = metrics
        self.log = log
    }

    package var enabled: Bool { limit.rate > 0 }

    /// Whether a new connection from `address` (4 or 16 bytes) may go on, at `now`
    /// (monotonic seconds).
    package func admit(_ address: [UInt8], now: Double) -> Bool {
        guard enabled, !exempt.contains(where: { $0.contains(address) }) else { return true }
        let key = ClientAddress.limitKey(address)
        let (admitted, logIt) = lock.withLock { () -> (Bool, Bool) in
            var bucket = buckets[key] ?? Bucket(tokens: limit.burst, updated: now, logged: nil)
            if buckets[key] == nil && buckets.count >= capacity {
                if now - lastSweep >= 1 {
                    lastSweep = now
                    dropIdle(now: now)
                }
                if buckets.count >= capacity { return (true, false) }
            }
            let elapsed = max(0, now - bucket.updated)
            bucket.tokens = min(limit.burst, bucket.tokens + elapsed * limit.rate)
            bucket.updated = max(bucket.updated, now)
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[key] = bucket
                return (true, false)
            }
            let due = bucket.logged.map { now - $0 >= Self.logInterval } ?? true
            if due { bucket.logged = now }
            buckets[key] = bucket
            return (false, due)
        }
        if !admitted { metrics?.connectionRefused() }
        if logIt {
            log(
                "refusing new connections from \(ClientAddress.text(key)): more than \(Self.number(limit.rate)) a second "
                    + "(connection-rate; burst \(Self.number(limit.burst))); counted in /metrics, logged again in a minute at most"
            )
        }
        return admitted
    }

    /// Addresses whose bucket is tracked now.
    package var tracked: Int { lock.withLock { buckets.count } }

    /// Forgets the addresses whose bucket has filled up again (called with the lock held).
    private func dropIdle(now: Double) {
        buckets = buckets.filter { _, bucket in
            bucket.tokens + max(0, now - bucket.updated) * limit.rate < limit.burst
        }
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// MHD_AcceptPolicyCallback: `cls` is the server's `Admission`. Runs on the thread that
/// accepted, before libmicrohttpd allocates anything for the connection.
func acceptPolicy(cls: UnsafeMutableRawPointer?, address: UnsafePointer<sockaddr>?, length: socklen_t) -> MHD_Result {
    guard let cls, let address else { return .YES }
    let admission = Unmanaged<Admission>.fromOpaque(cls).takeUnretainedValue()
    guard let bytes = socketAddressBytes(address, length: length) else { return .YES }
    return admission.admit(bytes, now: monotonicSeconds()) ? .YES : .NO
}

/// The 4 or 16 address bytes of an AF_INET or AF_INET6 socket address, else nil.
func socketAddressBytes(_ address: UnsafePointer<sockaddr>, length: socklen_t) -> [UInt8]? {
    let raw = UnsafeRawPointer(address)
    switch Int32(address.pointee.sa_family) {
    case AF_INET where Int(length) >= MemoryLayout<sockaddr_in>.size:
        return withUnsafeBytes(of: raw.loadUnaligned(as: sockaddr_in.self).sin_addr) { Array($0) }
    case AF_INET6 where Int(length) >= MemoryLayout<sockaddr_in6>.size:
        return withUnsafeBytes(of: raw.loadUnaligned(as: sockaddr_in6.self).sin6_addr) { Array($0) }
    default:
        return nil
    }
}

import FingerAuthDomain

/// The log lines for connections cut at the request-head deadline, without flooding: what
/// was cut is written at most once a second; up to `singleLines` connections get a line
/// each, more get one line with counts by address (the busiest first, at most
/// `addressesShown` of them).
struct SlowClientReport {
    static let singleLines = 3
    static let addressesShown = 8
    static let interval = 1.0

    private var pending: [String] = []
    private var lastFlush = -Double.infinity

    /// Records connections from these peers as cut.
    mutating func add(_ peers: [String]) {
        pending.append(contentsOf: peers)
    }

    /// The lines due now (none when nothing is pending, or the last flush was less than
    /// `interval` ago and `force` is false); what they cover is forgotten.
    mutating func lines(now: Double, force: Bool, timeout: Int) -> [String] {
        guard !pending.isEmpty, force || now - lastFlush >= Self.interval else { return [] }
        lastFlush = now
        let peers = pending
        pending = []
        let reason = "request head not complete after \(timeout) s"
        if peers.count <= Self.singleLines {
            return peers.map { "slow client \(LogText.clean($0, limit: 64)): \(reason); connection closed" }
        }
        var counts: [String: Int] = [:]
        for peer in peers { counts[peer, default: 0] += 1 }
        let busiest = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        var byAddress = busiest.prefix(Self.addressesShown)
            .map { "\(LogText.clean($0.key, limit: 64)) \($0.value)" }.joined(separator: ", ")
        if busiest.count > Self.addressesShown {
            byAddress += " and \(busiest.count - Self.addressesShown) more addresses"
        }
        return ["slow clients: \(peers.count) connections closed, \(reason); by address: \(byAddress)"]
    }
}

/// The agent's fair turn at the one reader, between uids (its server process keeps this).
///
/// The rule: when a uid was told "reader busy" within the last 30 s (it waits), any other
/// uid that has a request running, or whose request held the reader in the last 10 s, is
/// told "busy" too instead of taking the reader again. So once the request holding the
/// reader ends, the waiting uid's next request (made within those 10 s) gets the reader:
/// a uid waits at most for the one request in progress — at most the helper's bounds
/// (`timeout` + 14 s) — plus its own retry interval, however fast the other uid asks
/// again. A uid that yields is waiting in turn, so two busy uids take turns; nobody is held
/// back for more than 10 s after its own request.
package struct ReaderTurns: Sendable {
    /// How long a uid that held the reader lets a waiting uid go first.
    package static let turnMilliseconds: Int64 = 10_000
    /// How long a "busy" answer marks a uid as waiting.
    package static let waitingMilliseconds: Int64 = 30_000

    /// Each waiting uid and when it was last told "busy".
    private var waiting: [UInt32: Int64] = [:]
    /// Each uid whose request held the reader, and until when it yields.
    private var yields: [UInt32: Int64] = [:]

    package init() {}

    /// `uid` was told the reader is busy at `now`.
    package mutating func toldBusy(_ uid: UInt32, at now: Int64) {
        waiting[uid] = now
    }

    /// A request of `uid` that held the reader ended at `now`: it had its turn.
    package mutating func heldEnded(_ uid: UInt32, at now: Int64) {
        waiting[uid] = nil
        yields[uid] = now.addingReportingOverflow(ReaderTurns.turnMilliseconds).partialValue
    }

    /// Whether a new request of `uid` must let a waiting uid go first; `running` says that
    /// `uid` has a request in progress (which may hold the reader now).
    package mutating func mustYield(_ uid: UInt32, running: Bool, now: Int64) -> Bool {
        waiting = waiting.filter { now &- $0.value < ReaderTurns.waitingMilliseconds }
        yields = yields.filter { $0.value > now }
        guard waiting.keys.contains(where: { $0 != uid }) else { return false }
        return running || yields[uid] != nil
    }
}

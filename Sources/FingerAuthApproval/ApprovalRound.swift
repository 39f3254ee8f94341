import FingerAuthCore

/// One pending approval at the watcher, from shown to ended: the notification and the scan
/// run side by side, and the first of the person's finger, "Not me" or the approval's end
/// decides what happens to both. Plain values, so that every path is a unit test.
package struct ApprovalRound: Sendable {
    /// What happened.
    package enum Event: Equatable, Sendable {
        /// The scan matched the user's finger.
        case matched
        /// Every try of the scan missed.
        case noMatch
        /// The scan could not read a finger (the reason).
        case scanFailed(String)
        /// The notification's "Not me".
        case notMe
        /// The person closed the notification without choosing: the finger still decides.
        case dismissed
        /// The watch no longer lists it: decided elsewhere, withdrawn or expired.
        case gone
        /// Its expiry passed (by the authenticator's clock).
        case expired
        /// The person left (the seat locked, the session ended): shown to nobody now.
        case leftSeat
    }

    /// What the watcher does about it, in order.
    package enum Step: Equatable, Sendable {
        case stopScan
        case closeNotification
        case decide(ApprovalVerdict)
        /// The outcome's log line when no decision is sent (a decision logs its answer).
        case log(String)
    }

    package private(set) var ended = false
    private var notificationOpen = true
    private var scanning = true
    private let what: String

    /// `what` names the request in log lines (`web01's request (code 47)`). The notification
    /// is shown and the scan running when a round starts.
    package init(what: String) { self.what = what }

    package mutating func handle(_ event: Event) -> [Step] {
        guard !ended else { return [] }
        switch event {
        case .matched:
            scanning = false
            return finish([.decide(.approve)])
        case .notMe:
            return finish([.decide(.deny)])
        case .dismissed:
            notificationOpen = false
            return []
        case .noMatch:
            scanning = false
            return finish([.log("no match: \(what) stays pending")])
        case let .scanFailed(why):
            scanning = false
            return finish([.log("no finger read: \(why); \(what) stays pending")])
        case .gone:
            return finish([.log("\(what) is no longer pending (decided on another workstation, withdrawn or expired)")])
        case .expired:
            return finish([.log("\(what) expired: nothing decided")])
        case .leftSeat:
            return finish([.log("\(what) no longer shown: the seat is locked or the session left; nothing decided")])
        }
    }

    /// Ends the round: the scan stopped and the notification closed before `then`, so that
    /// neither outlives a decision.
    private mutating func finish(_ then: [Step]) -> [Step] {
        ended = true
        var steps: [Step] = []
        if scanning { steps.append(.stopScan) }
        if notificationOpen { steps.append(.closeNotification) }
        scanning = false
        notificationOpen = false
        return steps + then
    }
}

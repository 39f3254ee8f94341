import FingerAuthApproval
import FingerAuthLoginDomain
import FingerAuthSystem

/// The user's finger for `fingerauth approve`: one `FingerScan` read to its end, its progress
/// shown on the terminal.
enum ApprovalFinger {
    enum Outcome: Equatable {
        case matched(finger: String)
        /// Every try missed.
        case noMatch
        /// No finger could be read: the reason.
        case failed(String)
    }

    /// Reads `user`'s finger; `show` gets the lines for the person (the reader's name, misses).
    /// `whenMatched` runs at the match, before the helper has closed the reader (the decision
    /// need not wait for the close); the helper's end is awaited after it.
    static func read(
        user: String, options: Options, issuer: String, show: (String) -> Void, whenMatched: () -> Void
    ) -> Outcome {
        let scan: FingerScan
        switch FingerScan.start(user: user, options: options, issuer: issuer) {
        case let .success(started): scan = started
        case let .failure(why): return .failed(why.message)
        }
        while true {
            // The scan's own deadline bounds each slice.
            switch scan.next(until: MonotonicInstant.now().adding(milliseconds: 60_000)) {
            case nil: continue
            case let .ready(reader)?:
                show("touch the reader (\(reader)) with \(user)'s finger to approve, or Ctrl-C to leave it pending")
            case let .retry(hint)?: show("try again: \(hint)")
            case let .missed(left)?: show("no match; \(left) \(left == 1 ? "try" : "tries") left")
            case .noMatch?:
                show("no match")
                return .noMatch
            case let .matched(finger)?:
                whenMatched()
                scan.settle()
                return .matched(finger: finger)
            case let .failed(why)?: return .failed(why)
            }
        }
    }
}

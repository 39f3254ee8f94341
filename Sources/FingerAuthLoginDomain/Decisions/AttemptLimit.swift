/// The limit on failed fingerprint attempts, per target user, whichever way the reader is
/// asked (the module's root path in sudo or su, the agent for screen lockers): both keep the
/// same record (`AttemptLedger`) and apply the same rule.
///
/// A *failed attempt* is a request for which the reader was armed (the helper said `READY`)
/// and that did not end in success — whatever ended it: no match, a refusal, no finger in
/// time, the client hanging up, a signal, a crash. It is counted *before* the helper starts
/// (and so before anyone is asked for a finger) and taken back only when the helper ended
/// on its own before `READY`; a success clears the count. No way of ending a request once
/// the helper holds the reader escapes it.
///
/// The rule, in numbers: five failed attempts in a row arm the reader as usual; after the
/// fifth, the reader is not armed for that user for 5 minutes after the last failure; when
/// the pause is over one more attempt is allowed, and each further failure doubles the
/// pause (10, 20, 40 minutes), at most 1 hour. A success clears the count; so does a day
/// without a failure (and a reboot: the records live in `/run`). A locker that re-arms
/// every 250 ms thus gets 5 prompts, then about one an hour.
package enum AttemptLimit {
    /// Failed attempts in a row that are armed without a pause.
    package static let failuresInARow = 5
    /// The pause after the fifth failure in a row; it doubles with each further one.
    package static let firstPauseMilliseconds: Int64 = 300_000
    /// The longest pause.
    package static let longestPauseMilliseconds: Int64 = 3_600_000
    /// A record whose last failure is this old counts as empty.
    package static let forgetMilliseconds: Int64 = 86_400_000

    /// The record as it counts at `now`: empty once a day has passed since its last failure;
    /// a last failure "in the future" (a record no clock of ours wrote) is read as now, so
    /// that it can only lengthen a pause, never end one.
    package static func current(_ record: AttemptRecord, now: Int64) -> AttemptRecord {
        guard record.failures > 0 else { return AttemptRecord() }
        let last = min(record.lastFailure, now)
        if now &- last >= forgetMilliseconds { return AttemptRecord() }
        return AttemptRecord(failures: record.failures, lastFailure: last)
    }

    /// The pause that follows `failures` failed attempts in a row (0: none).
    package static func pauseMilliseconds(afterFailures failures: Int) -> Int64 {
        guard failures >= failuresInARow else { return 0 }
        // 5 → 5 min, 6 → 10, 7 → 20, 8 → 40, then the hour; the shift is bounded.
        let doublings = min(failures - failuresInARow, 4)
        return min(firstPauseMilliseconds << Int64(doublings), longestPauseMilliseconds)
    }

    /// Until when (milliseconds on the record's clock) the reader may not be armed for this
    /// user; nil when it may be armed now.
    package static func pausedUntil(_ record: AttemptRecord, now: Int64) -> Int64? {
        let counted = current(record, now: now)
        let pause = pauseMilliseconds(afterFailures: counted.failures)
        guard pause > 0 else { return nil }
        let until = counted.lastFailure.addingReportingOverflow(pause)
        let end = until.overflow ? Int64.max : until.partialValue
        return end > now ? end : nil
    }

    /// The record after one more failed attempt at `now`.
    package static func addingFailure(_ record: AttemptRecord, now: Int64) -> AttemptRecord {
        let counted = current(record, now: now)
        return AttemptRecord(failures: min(counted.failures + 1, maxFailures), lastFailure: now)
    }

    /// The record after a failed attempt is taken back (the parallel prompt, when the person
    /// answered with the password and no finger was tried). The time stays.
    package static func takingBack(_ record: AttemptRecord) -> AttemptRecord {
        guard record.failures > 1 else { return AttemptRecord() }
        return AttemptRecord(failures: record.failures - 1, lastFailure: record.lastFailure)
    }

    /// The count a record holds at most (it is written in a fixed width).
    package static let maxFailures = 9999

    /// The record a record that cannot be trusted is replaced with: at the limit, as of now
    /// (neither lifting the limit nor locking the user out for longer than its first pause).
    package static func atTheLimit(now: Int64) -> AttemptRecord {
        AttemptRecord(failures: failuresInARow, lastFailure: now)
    }

    /// The log line's words for a paused user.
    package static func pausedReason(_ record: AttemptRecord, until: Int64, now: Int64) -> String {
        let seconds = max(1, (until &- now + 999) / 1000)
        return "\(record.failures) failed fingerprint attempts in a row; reader not armed for another \(seconds) s"
    }
}

/// One user's failed attempts: how many in a row, and when the last one was counted
/// (milliseconds on the ledger's clock: time since boot, which a change of the wall clock
/// cannot move).
package struct AttemptRecord: Equatable, Sendable {
    package var failures: Int
    package var lastFailure: Int64

    package init(failures: Int = 0, lastFailure: Int64 = 0) {
        self.failures = failures
        self.lastFailure = lastFailure
    }

    /// The record as one fixed-width line (so that it is rewritten in place, in the space
    /// it already has): `fingerauth-attempts 1 <failures, 4 digits> <ms, 19 digits>`.
    package var line: String {
        let count = String(max(0, min(failures, AttemptLimit.maxFailures)))
        let time = String(max(0, lastFailure))
        return AttemptRecord.prefix + String(repeating: "0", count: 4 - count.utf8.count) + count + " "
            + String(repeating: "0", count: max(0, 19 - time.utf8.count)) + time + "\n"
    }

    /// Parses exactly what `line` writes; nil for anything else.
    package init?(line: String) {
        let bytes = Array(line.utf8)
        guard bytes.count == AttemptRecord.lineBytes, line.hasPrefix(AttemptRecord.prefix), bytes.last == 10 else {
            return nil
        }
        let fields = line.dropFirst(AttemptRecord.prefix.utf8.count).dropLast().split(
            separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 2, fields[0].utf8.count == 4, fields[1].utf8.count == 19,
            fields.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
            let count = Int(fields[0]), let time = Int64(fields[1])
        else { return nil }
        self.init(failures: count, lastFailure: time)
    }

    static let prefix = "fingerauth-attempts 1 "
    /// The length of every record line.
    package static let lineBytes = prefix.utf8.count + 4 + 1 + 19 + 1
}

/// Where the records are kept: a root-only file per user under `attempts_dir` in the module
/// and the agent (`FileAttemptLedger`), a dictionary in unit tests. Every call is bounded
/// (no wait on another process beyond a short, fixed time).
package protocol AttemptLedger {
    /// Milliseconds on the records' clock (CLOCK_BOOTTIME for the files: it runs through
    /// suspend, and no wall-clock change moves it).
    func nowMilliseconds() -> Int64
    /// Reads the user's record under its lock — made, empty, when there is none, so that a
    /// later failure is written in place — lets `change` update it, and writes it back when
    /// it changed. A record that cannot be trusted (a link, another owner, an open mode,
    /// unreadable content) is replaced by `AttemptLimit.atTheLimit` before `change` sees it,
    /// and the entry says so; an error when the record can be neither read nor made.
    func update(_ user: String, _ change: (inout AttemptRecord) -> Void) -> Result<AttemptEntry, AttemptLedgerError>
}

/// A record as `AttemptLedger.update` left it.
package struct AttemptEntry: Equatable, Sendable {
    package var record: AttemptRecord
    /// Why the record found was not trusted and was replaced (for the log); nil normally.
    package var replaced: String?

    package init(record: AttemptRecord, replaced: String? = nil) {
        self.record = record
        self.replaced = replaced
    }
}

/// Why a user's record could be neither read nor made (the text names the path and the rule).
package struct AttemptLedgerError: Error, Equatable, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

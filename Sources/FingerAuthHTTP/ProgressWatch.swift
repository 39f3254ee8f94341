import FingerAuthSystem

/// How long a request's process was kept from running while it waited: every wait goes in
/// slices of at most `sliceMilliseconds`, and a slice (or the work between two of them)
/// that took longer than asked, beyond `toleranceMilliseconds`, was time the process was
/// not running — frozen (cgroup freezer), stopped (SIGSTOP) or starved (a CPU quota). A
/// timeout is evidence that the far end is silent only when the process was running for
/// most of it: a local user who owns the cgroup of `sudo` can freeze the helper until its
/// deadline passes, and that must not read as "the authenticator is unreachable".
final class ProgressWatch {
    static let sliceMilliseconds: Int32 = 50
    static let toleranceMilliseconds: Int64 = 20

    private var last = MonotonicInstant.now().milliseconds
    private var asleep: Int64 = 0
    /// Milliseconds lost so far.
    private(set) var stalledMilliseconds: Int64 = 0
    /// `HTTPSettings.abandon`: asked before every slice.
    var abandon: (@Sendable () -> Bool)?

    /// The process runs now: the time since the last mark beyond what it asked to sleep
    /// (`willSleep`) and the tolerance was lost.
    func mark() {
        let now = MonotonicInstant.now().milliseconds
        let over = now &- last &- asleep &- ProgressWatch.toleranceMilliseconds
        if over > 0 { stalledMilliseconds &+= over }
        last = now
        asleep = 0
    }

    /// The process is about to sleep up to `milliseconds`.
    func willSleep(_ milliseconds: Int32) { asleep &+= Int64(milliseconds) }

    /// A wait that measured itself (C code slicing its own waits) lost `milliseconds`;
    /// the next mark starts from now.
    func measured(_ milliseconds: Int) {
        stalledMilliseconds &+= Int64(max(0, milliseconds))
        last = MonotonicInstant.now().milliseconds
        asleep = 0
    }

    /// Whether a timeout of a request bounded by `bound` ms counts as the far end's silence:
    /// the process lost less than a quarter of it.
    func ranThrough(bound: Int) -> Bool { stalledMilliseconds < Int64(max(0, bound)) / 4 }
}

import FingerAuthThreads
import FingerAuthTransport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The timers that resume parked connections: an action runs no earlier than asked; a long
/// poll's deadline comes at the next tick, so that deadlines within one tick run together;
/// `stop()` runs what is left at once.
final class WaitTimersTests: XCTestCase {
    func testAnActionRunsNoEarlierThanAsked() {
        let timers = WaitTimers()
        XCTAssertTrue(timers.start())
        defer { timers.stop() }
        let times = RunTimes()
        let asked = now()
        timers.after(0.15) { times.add(now()) }
        XCTAssertTrue(times.wait(for: 1, seconds: 5))
        let ran = times.values[0] - asked
        XCTAssertGreaterThanOrEqual(ran, 0.15)
        XCTAssertLessThan(ran, 1.0)
    }

    func testDeadlinesWithinOneTickRunTogetherAtTheTick() {
        let timers = WaitTimers()
        XCTAssertTrue(timers.start())
        defer { timers.stop() }
        let tick = 0.4
        // Start just past a tick, so that the three deadlines fall within the next one.
        let past = now().truncatingRemainder(dividingBy: tick)
        usleep(useconds_t(((tick - past) + 0.02) * 1_000_000))
        let asked = now()
        let times = RunTimes()
        for seconds in [0.01, 0.1, 0.2] {
            timers.after(seconds, roundedUpTo: tick) { times.add(now()) }
        }
        XCTAssertTrue(times.wait(for: 3, seconds: 5))
        let ran = times.values
        XCTAssertLessThan(ran.max()! - ran.min()!, 0.05, "\(ran)")
        XCTAssertGreaterThanOrEqual(ran.min()! - asked, 0.2, "all at the tick past the last deadline")
        let offTick = ran.min()!.truncatingRemainder(dividingBy: tick)
        XCTAssertLessThan(min(offTick, tick - offTick), 0.05, "ran at a multiple of the tick: \(ran)")
    }

    func testStopRunsWhatIsLeftAtOnce() {
        let timers = WaitTimers()
        XCTAssertTrue(timers.start())
        let times = RunTimes()
        timers.after(60) { times.add(now()) }
        timers.after(60, roundedUpTo: 0.5) { times.add(now()) }
        let stopped = now()
        timers.stop()
        XCTAssertEqual(times.values.count, 2)
        XCTAssertLessThan(times.values.max()! - stopped, 1.0)
    }

    func testWithoutItsThreadAnActionRunsAtOnce() {
        let timers = WaitTimers()
        let times = RunTimes()
        timers.after(60, roundedUpTo: 0.5) { times.add(now()) }
        XCTAssertEqual(times.values.count, 1)
    }
}

private func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// When the actions ran, from the timers' thread.
///
/// `@unchecked Sendable`: `times` only under `lock`.
private final class RunTimes: @unchecked Sendable {
    private let lock = Lock()
    private var times: [Double] = []
    func add(_ time: Double) { lock.withLock { times.append(time) } }
    var values: [Double] { lock.withLock { times } }

    func wait(for count: Int, seconds: Double) -> Bool {
        let deadline = now() + seconds
        while values.count < count {
            if now() > deadline { return false }
            usleep(5_000)
        }
        return true
    }
}

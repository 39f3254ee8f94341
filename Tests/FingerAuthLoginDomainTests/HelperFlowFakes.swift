import FingerAuthCore
import FingerAuthLoginDomain

// Scripted stand-ins for the login helper's parts (`HelperLoginFlow`'s ports): unit tests
// of its decisions only. They share one `Journal`, so that a test can check the order in
// which the flow used them.

/// What the fakes were asked, in order.
final class Journal {
    var entries: [String] = []
    func note(_ entry: String) { entries.append(entry) }
}

/// A monotonic clock the fakes move (the warm-up's round trip, the person's time at the
/// reader), the wall clock and the grant clocks fixed.
///
/// `@unchecked Sendable`: the tests run the flow on one thread (`FakeBackground` runs the
/// work inline), so nothing touches it from two threads.
final class FakeHelperClock: HelperClock, @unchecked Sendable {
    var milliseconds: Int64 = 9
    var wall: Int64 = 1_700_000_000
    var grant: GrantClockReading? = GrantClockReading(wall: 1_700_000_000, bootID: "boot-1", bootMilliseconds: 5000)

    func now() -> Int64 { wall }
    func grantClock() -> GrantClockReading? { grant }
    func monotonicMilliseconds() -> Int64 { milliseconds }
}

final class FakeReaderSide: HelperReaderSide {
    let journal: Journal
    let clock: FakeHelperClock
    var chooseStop: HelperStop?
    var openStop: HelperStop?
    /// One entry per try: the lines the reader says first (`RETRY`), then the try's result.
    var tries: [(events: [HelperMessage], result: Result<HelperScan, HelperStop>)] = [
        ([], .success(.match(finger: "right-index-finger")))
    ]
    var opened: FakeReader?

    init(journal: Journal, clock: FakeHelperClock) {
        self.journal = journal
        self.clock = clock
    }

    func choose() throws(HelperStop) {
        journal.note("choose")
        if let chooseStop { throw chooseStop }
    }

    func open() throws(HelperStop) -> FakeReader {
        journal.note("open")
        if let openStop { throw openStop }
        let reader = FakeReader(side: self)
        opened = reader
        return reader
    }
}

final class FakeReader: HelperReader {
    let side: FakeReaderSide
    var deadlines: [Int64] = []
    var closed = 0

    init(side: FakeReaderSide) { self.side = side }

    var readerName: String { "virtual" }

    func verify(deadline: Int64, events: (HelperMessage) -> Void) throws(HelperStop) -> HelperScan {
        side.journal.note("verify")
        deadlines.append(deadline)
        guard !side.tries.isEmpty else { throw HelperStop(.timeout, "No finger was read before the deadline") }
        let next = side.tries.removeFirst()
        next.events.forEach(events)
        side.clock.milliseconds += 640
        return try next.result.get()
    }

    func close() {
        side.journal.note("close")
        closed += 1
    }
}

struct FakeDeviceKey: HelperDeviceKey {
    let journal: Journal
    var kid = "kid-1"
    var isHardware = false
    var signs = true

    var signingFailure: String { "signing failed: fake key" }

    func signRS256(_ input: [UInt8]) -> [UInt8]? {
        journal.note("sign")
        return signs ? [1, 2, 3] : nil
    }
}

struct FakeKeySource: HelperKeySource {
    let journal: Journal
    var result: Result<FakeDeviceKey, KeyLoadError>

    func load() -> Result<FakeDeviceKey, KeyLoadError> {
        journal.note("key")
        return result
    }
}

final class FakeChannel: AuthenticatorChannel {
    let journal: Journal
    let clock: FakeHelperClock
    var warm: Result<AuthenticatorAnswer, AuthenticatorFailure> = .success(AuthenticatorAnswer(status: 405, body: []))
    var post: Result<AuthenticatorAnswer, AuthenticatorFailure>?
    var warmUps: [(url: String, body: [UInt8]?, bound: Int)] = []
    var posts: [(url: String, body: [UInt8])] = []

    init(journal: Journal, clock: FakeHelperClock) {
        self.journal = journal
        self.clock = clock
    }

    func warmUp(url: String, body: [UInt8]?, boundMilliseconds: Int) -> Result<
        AuthenticatorAnswer, AuthenticatorFailure
    > {
        journal.note("warm-up")
        warmUps.append((url, body, boundMilliseconds))
        clock.milliseconds += 3
        return warm
    }

    func postToken(url: String, body: [UInt8]) -> Result<AuthenticatorAnswer, AuthenticatorFailure> {
        journal.note("post")
        posts.append((url, body))
        return post ?? .success(AuthenticatorAnswer(status: 500, body: []))
    }
}

final class FakeBook: HelperOfflineBook {
    let journal: Journal
    var sync: HelperSyncRequest?
    var usable: Result<OfflineUse, GrantRefusal> = .failure(GrantRefusal("no offline grant"))
    var record: Result<OfflineUse, GrantRefusal>?
    var keeps = true
    var kept: [(token: String, kid: String, grantKeys: JSONValue?)] = []
    var applied: [JSONValue] = []
    var floors: [Int64] = []

    init(journal: Journal) { self.journal = journal }

    func syncRequest(loginURL: String) -> HelperSyncRequest? { sync }
    func raiseClockFloor(to wall: Int64) { floors.append(wall) }
    func applySync(_ answer: JSONValue) { applied.append(answer) }

    func usable(kid: String, service: String, now: GrantClockReading) -> Result<OfflineUse, GrantRefusal> {
        journal.note("grant?")
        return usable
    }

    func recordLogin(
        kid: String, service: String, jti: String, now: GrantClockReading, sign: ([UInt8]) -> [UInt8]?
    ) -> Result<OfflineUse, GrantRefusal> {
        journal.note("record")
        guard sign(Array(jti.utf8)) != nil else { return .failure(GrantRefusal("device key did not sign")) }
        return record ?? usable
    }

    func keep(token: String, kid: String, grantKeys: JSONValue?, now: GrantClockReading) -> Bool {
        journal.note("keep")
        kept.append((token, kid, grantKeys))
        return keeps
    }

    func drop() { journal.note("drop") }
}

/// The background work, run on the test's own thread: `start` keeps it, `awaitWarmUp` runs
/// it (when the authenticator `answers` within the bound) — by then the key is loaded, as
/// when the reader takes longer to open than the warm-up. `threads` false: no work apart,
/// the flow does it itself.
///
/// `@unchecked Sendable`: one thread only (the test's).
final class FakeBackground: HelperBackground, @unchecked Sendable {
    let journal: Journal
    var threads = true
    var answers = true
    var endsInTime = true
    var work: (@Sendable () -> Void)?
    var key = false
    var warmUpDeadlines: [Int64] = []

    init(journal: Journal) { self.journal = journal }

    func start(_ work: @escaping @Sendable () -> Void) -> Bool {
        guard threads else { return false }
        self.work = work
        return true
    }

    func warmedUp() { journal.note("warmed") }

    func awaitWarmUp(until deadline: Int64) -> Bool {
        warmUpDeadlines.append(deadline)
        guard answers else { return false }
        let run = work
        work = nil
        run?()
        return true
    }

    func keyLoaded() { key = true }
    func awaitKey(until deadline: Int64) -> Bool { key }
    func awaitEnd(until deadline: Int64) -> Bool { endsInTime }
}

final class FakeOutput: HelperOutput {
    let journal: Journal
    var lines: [String] = []
    var terminalEnds = 0

    init(journal: Journal) { self.journal = journal }

    func emit(_ message: HelperMessage) {
        journal.note(message.line)
        lines.append(message.line)
    }

    func endTerminalRead() {
        journal.note("terminal")
        terminalEnds += 1
    }
}

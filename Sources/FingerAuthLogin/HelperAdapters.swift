import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthOffline
import FingerAuthReader
import FingerAuthSystem
import FingerAuthTPM

// The real parts `HelperLoginFlow` runs over in `fingerauth-login --login`: libfprint or
// fprintd, the device key (file or TPM), the offline book under the state directory, the
// system's clocks, a thread for the warm-up, and the pipe to the module.

/// The instant `milliseconds` (on the monotonic clock) names.
func monotonicInstant(_ milliseconds: Int64) -> MonotonicInstant {
    let now = MonotonicInstant.now()
    return now.adding(milliseconds: milliseconds &- now.milliseconds)
}

/// The reader side: the plan (lid, fprintd) made from the prints read before any thread
/// started (they are checked in forked children), then the reader it chose opened.
final class PlannedReaders: HelperReaderSide {
    /// How long the reader may take to open.
    static let openSeconds = 5.0

    let job: LoginJob
    let prints: Result<[(finger: String, data: [UInt8])], ReaderError>
    private var plan: ReaderPlan?

    init(job: LoginJob, prints: Result<[(finger: String, data: [UInt8])], ReaderError>) {
        self.job = job
        self.prints = prints
    }

    func choose() throws(HelperStop) {
        do {
            plan = try ReaderPlan.make(job: job, localPrints: prints, openSeconds: PlannedReaders.openSeconds)
        } catch {
            throw error.stop
        }
    }

    func open() throws(HelperStop) -> OpenedReader {
        guard let plan else { throw HelperStop(.deviceError, "no reader was chosen") }
        do {
            return OpenedReader(backend: try plan.open(seconds: PlannedReaders.openSeconds))
        } catch {
            throw error.stop
        }
    }
}

/// An open reader: libfprint's or fprintd's.
struct OpenedReader: HelperReader {
    let backend: FingerprintBackend

    var readerName: String { backend.readerName }

    func verify(deadline: Int64, events: (HelperMessage) -> Void) throws(HelperStop) -> HelperScan {
        do {
            switch try backend.verify(deadline: monotonicInstant(deadline), events: events) {
            case let .match(finger): return .match(finger: finger)
            case .noMatch: return .noMatch
            }
        } catch {
            throw error.stop
        }
    }

    func close() { backend.close() }
}

extension ReaderError {
    /// The flow's form of this error: its `FAIL` reason and sentence.
    var stop: HelperStop { HelperStop(failure, message) }
}

/// The user's device key under the state directory: a key file or a TPM key's handle.
struct DeviceKeys: HelperKeySource {
    let job: LoginJob

    func load() -> Result<LoadedKey, KeyLoadError> {
        let path = StatePaths(root: job.options.stateDirectory, user: job.user).deviceKey
        return DeviceKeyLoader(tcti: job.options.tpmTCTI).load(path).map(LoadedKey.init)
    }
}

/// A loaded device key; released (a TPM key's object flushed) with the last reference.
struct LoadedKey: HelperDeviceKey {
    let key: DeviceKey

    var kid: String { key.kid }
    var isHardware: Bool { key.isHardware }
    func signRS256(_ input: [UInt8]) -> [UInt8]? { key.signRS256(input) }

    /// For a TPM key, the TPM's state and the fix.
    var signingFailure: String {
        if case let .hardware(hardware) = key.backing, let tpm = hardware as? TPMDeviceKey, let error = tpm.lastError {
            return "signing failed: TPM (\(error.kind.rawValue)) \(error.description); \(error.advice)"
        }
        return "signing failed"
    }
}

/// The system's clocks.
struct SystemHelperClock: HelperClock {
    func now() -> Int64 { SystemClock().now() }
    func grantClock() -> GrantClockReading? { GrantClock.read() }
    func monotonicMilliseconds() -> Int64 { MonotonicInstant.now().milliseconds }
}

/// The user's offline book, the pinned grant keys and the clock floor under the state directory.
struct OfflineBookOnDisk: HelperOfflineBook {
    let book: OfflineBook
    let pins: GrantPins
    let stateDirectory: String

    init(job: LoginJob) {
        stateDirectory = job.options.stateDirectory
        book = OfflineBook(stateDirectory: stateDirectory, user: job.user, host: job.issuer)
        pins = GrantPins(stateDirectory: stateDirectory)
    }

    func syncRequest(loginURL: String) -> HelperSyncRequest? {
        OfflineSync.url(forLogin: loginURL).flatMap { url in
            OfflineSync.body([book]).map { (url: url, body: $0) }
        }
    }

    func raiseClockFloor(to wall: Int64) { ClockFloor(stateDirectory: stateDirectory).raise(to: wall) }

    func applySync(_ answer: JSONValue) { OfflineSync.apply(answer, books: [book], pins: pins) }

    func usable(kid: String, service: String, now: GrantClockReading) -> Result<OfflineUse, GrantRefusal> {
        book.usable(kid: kid, service: service, pins: pins.keys(), now: now).map {
            (gid: $0.grant.gid, expires: $0.expires)
        }
    }

    func recordLogin(
        kid: String, service: String, jti: String, now: GrantClockReading, sign: ([UInt8]) -> [UInt8]?
    ) -> Result<OfflineUse, GrantRefusal> {
        book.recordLogin(kid: kid, service: service, jti: jti, pins: pins.keys(), now: now, sign: sign).map {
            (gid: $0.grant.gid, expires: $0.expires)
        }
    }

    func keep(token: String, kid: String, grantKeys: JSONValue?, now: GrantClockReading) -> Bool {
        // The keys pinned after this answer, read once: the grant is checked against them.
        let pinned = grantKeys.flatMap { try? pins.pin($0) } ?? pins.keys()
        if case .failure = book.keep(token, kid: kid, pins: pinned, now: now) { return false }
        return true
    }

    func drop() { book.drop() }
}

/// The warm-up on a thread of its own (`BackgroundWork`), its signals pipes (`OneShotSignal`).
///
/// `@unchecked Sendable`: the signals are safe from any thread (`fire` is one write(2)),
/// each is waited for by one thread only (`warmed` by the flow, `keyReady` by the work), and
/// `work` is set and read by the flow's thread alone.
final class ThreadBackground: HelperBackground, @unchecked Sendable {
    private let warmed = OneShotSignal()
    private let keyReady = OneShotSignal()
    private var work: BackgroundWork?

    func start(_ work: @escaping @Sendable () -> Void) -> Bool {
        guard warmed != nil, keyReady != nil else { return false }
        self.work = BackgroundWork(work)
        return self.work != nil
    }

    func warmedUp() { warmed?.fire() }
    func awaitWarmUp(until deadline: Int64) -> Bool { warmed?.wait(until: monotonicInstant(deadline)) ?? false }
    func keyLoaded() { keyReady?.fire() }
    func awaitKey(until deadline: Int64) -> Bool { keyReady?.wait(until: monotonicInstant(deadline)) ?? false }
    func awaitEnd(until deadline: Int64) -> Bool { work?.wait(until: monotonicInstant(deadline)) ?? true }
}

/// The pipe to the module (`LineOutput`), and for `prompt = parallel` the caller's terminal.
struct ModulePipe: HelperOutput {
    let terminal: TerminalTarget?

    func emit(_ message: HelperMessage) { LineOutput.emit(message) }

    func endTerminalRead() {
        if let terminal { TerminalInjector.inject(terminal) }
    }
}

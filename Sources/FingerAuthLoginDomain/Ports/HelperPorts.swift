import FingerAuthCore

// The parts the login helper's flow (`HelperLoginFlow`) talks to. The helper's executable
// plugs in the real ones (libfprint or fprintd, the device key file or the TPM, the HTTP
// client, the offline book under the state directory, a thread and its pipes); unit tests
// plug in scripted fakes.

/// Why the reader side stopped: the `FAIL` line's reason and its sentence.
package struct HelperStop: Error, Equatable, Sendable {
    package var failure: HelperFailure
    package var detail: String

    package init(_ failure: HelperFailure, _ detail: String) {
        self.failure = failure
        self.detail = detail
    }

    /// The line the helper writes for it.
    package var message: HelperMessage { .fail(failure, detail: detail) }
}

/// One try at the reader: a finger that matched one of the user's prints, or none.
package enum HelperScan: Equatable, Sendable {
    case match(finger: String)
    case noMatch
}

/// The reader side. `choose` asks the system bus (the lid, fprintd) and decides which
/// reader to use, before the device key is loaded, so that a closed lid or a reader that
/// fprintd holds ends the login at once; `open` then opens it (or claims fprintd's).
package protocol HelperReaderSide {
    associatedtype Reader: HelperReader
    func choose() throws(HelperStop)
    func open() throws(HelperStop) -> Reader
}

/// An open reader.
package protocol HelperReader {
    /// Its name, for `READY`.
    var readerName: String { get }
    /// One try, until `deadline` (the clock's monotonic milliseconds); `events` gets the
    /// reader's own lines (`RETRY`) as they come.
    func verify(deadline: Int64, events: (HelperMessage) -> Void) throws(HelperStop) -> HelperScan
    /// Closes the reader or releases fprintd's claim; more than once is harmless.
    func close()
}

/// The user's device key, loaded.
package protocol HelperDeviceKey: TokenSigner, SendableMetatype {
    /// A TPM key: it signs only after the finger matched.
    var isHardware: Bool { get }
    /// Why no signature could be had (for a TPM key: the TPM's state and the fix).
    var signingFailure: String { get }
}

/// Loads the user's device key (its file, its TPM handle).
package protocol HelperKeySource {
    associatedtype Key: HelperDeviceKey
    func load() -> Result<Key, KeyLoadError>
}

/// The helper's clocks: the wall clock (seconds, token times), the grant clocks (wall and
/// boot clock, for the offline judgement; nil when unreadable) and a monotonic clock in
/// milliseconds (deadlines, the login's stage times).
package protocol HelperClock: Sendable {
    func now() -> Int64
    func grantClock() -> GrantClockReading?
    func monotonicMilliseconds() -> Int64
}

/// The offline sync that replaces the warm-up request when the user holds a grant or has
/// offline logins not yet uploaded: its URL and body.
package typealias HelperSyncRequest = (url: String, body: [UInt8])

/// An offline login the grant allows: the grant's `gid` and when the login's right ends.
package typealias OfflineUse = (gid: String, expires: Int64)

/// The user's offline grant on this host, the pinned grant keys and the signed log of
/// offline logins (`OfflineBook`, `GrantPins`, `ClockFloor` in the helper).
package protocol HelperOfflineBook: SendableMetatype {
    /// The sync request for the login URL `loginURL`; nil when there is nothing to sync.
    func syncRequest(loginURL: String) -> HelperSyncRequest?
    /// An answer came while the user holds a grant: the clock floor rises to `wall`.
    func raiseClockFloor(to wall: Int64)
    /// The sync's answer (a 200's body, parsed) applied: grants ended, records acknowledged.
    func applySync(_ answer: JSONValue)
    /// Whether the grant allows an offline login of `kid` for `service` now.
    func usable(kid: String, service: String, now: GrantClockReading) -> Result<OfflineUse, GrantRefusal>
    /// The offline login recorded, signed by `sign`, judged again under the log's lock.
    func recordLogin(
        kid: String, service: String, jti: String, now: GrantClockReading, sign: ([UInt8]) -> [UInt8]?
    ) -> Result<OfflineUse, GrantRefusal>
    /// After an acceptance: `grantKeys` (the answer's, when it had some) pinned, then `token`
    /// kept as the user's grant in place of the one before; false when it could not be.
    func keep(token: String, kid: String, grantKeys: JSONValue?, now: GrantClockReading) -> Bool
    /// The user's grant on this host ends.
    func drop()
}

/// Work apart from the flow's own thread: the warm-up reaches the authenticator while the
/// flow asks the system bus, loads the key and opens the reader. The flow says when the key
/// is loaded (`keyLoaded`); the work waits for that within its bound (`awaitKey`).
package protocol HelperBackground: Sendable {
    /// Starts `work`; false when it cannot run apart (the flow then does it itself).
    func start(_ work: @escaping @Sendable () -> Void) -> Bool
    /// Said by the work once the warm-up has an outcome.
    func warmedUp()
    /// True once the work said `warmedUp`; false when `deadline` (monotonic ms) came first.
    func awaitWarmUp(until deadline: Int64) -> Bool
    /// Said by the flow once the device key is loaded.
    func keyLoaded()
    /// In the work: true once the flow said `keyLoaded`; false when `deadline` came first.
    func awaitKey(until deadline: Int64) -> Bool
    /// True once the work has ended; false when `deadline` came first.
    func awaitEnd(until deadline: Int64) -> Bool
}

/// What the module reads: one line per message, and for `prompt = parallel`, the newline
/// put on the terminal that ends the module's pending read once the verdict is out.
package protocol HelperOutput {
    func emit(_ message: HelperMessage)
    func endTerminalRead()
}

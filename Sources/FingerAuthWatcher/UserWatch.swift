import FingerAuthApproval
import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM
import FingerAuthThreads

#if canImport(Glibc)
import Glibc
#endif

/// One user's watch, on a thread of its own while she sits at the seat: the long poll of her
/// pending approvals (`ApprovalClient`, its token renewed before it expires), each shown
/// (`Notice`) while her finger is awaited (`FingerScan`), the first of finger, "Not me" and
/// the approval's end deciding (`ApprovalRound`). Errors are retried after a pause that
/// doubles up to `--retry`, with jitter.
///
/// `@unchecked Sendable`: `stopping` and `finished` are read and written under `lock` only;
/// everything else is set in `init` and never changed.
final class UserWatch: @unchecked Sendable {
    let user: String
    let uid: UInt32
    let gid: UInt32
    let settings: WatcherSettings
    private let lock = Lock()
    private var stopping = false
    private var finished = false
    private var thread: WorkerThread?

    /// Recently shown approvals (never shown twice: a no-match leaves one pending).
    private static let remembered = 32
    /// How often a shown approval is looked up again (gone: decided elsewhere, withdrawn).
    private static let checkMilliseconds: Int64 = 1000

    init(user: String, uid: UInt32, gid: UInt32, settings: WatcherSettings) {
        self.user = user
        self.uid = uid
        self.gid = gid
        self.settings = settings
    }

    /// Starts the thread; false (logged) when it could not.
    func start() -> Bool {
        switch WorkerThread.start({ [self] in
            run()
            lock.withLock { finished = true }
        }) {
        case let .success(started):
            thread = started
            return true
        case let .failure(why):
            log("\(user): cannot start a thread: \(why.message)")
            return false
        }
    }

    /// Asks the thread to end: it stops within a watch's park, and a shown approval is closed
    /// within a second.
    func stop() { lock.withLock { stopping = true } }

    /// Joins the thread when it has ended; true then.
    func reapIfFinished() -> Bool {
        guard lock.withLock({ finished }) else { return false }
        thread?.join()
        thread = nil
        return true
    }

    private var shouldStop: Bool { lock.withLock { stopping } }

    private func run() {
        var pause = 1
        var shown: [String] = []
        let paths = StatePaths(root: settings.options.stateDirectory, user: user)
        while !shouldStop {
            let key: DeviceKey
            switch DeviceKeyLoader(tcti: settings.options.tpmTCTI).load(paths.deviceKey) {
            case let .success(loaded): key = loaded
            case let .failure(why):
                retry("device key: \(why.message)", &pause)
                continue
            }
            let address = AuthenticatorAddress(options: settings.options)
            var client = address.approvalClient(user: user, key: key)
            if case let .failure(why) = client.learnClock() {
                retry(why.message, &pause)
                continue
            }
            var have: String?
            var clockTold = false
            while !shouldStop {
                let answer = client.watch(have: have, wait: settings.parkSeconds)
                guard case let .success(approvals) = answer else {
                    if case let .failure(why) = answer { retry(why.message, &pause) }
                    break
                }
                if pause > 1 { log("\(user): the watch answers again") }
                pause = 1
                if client.clock.isOff && !clockTold {
                    log("\(user): note: \(client.clock.description); signing by the authenticator's clock")
                    clockTold = true
                }
                have = approvals.first?.id
                guard !shouldStop else { return }
                guard let pending = approvals.first(where: { !shown.contains($0.id) }) else { continue }
                shown = Array((shown + [pending.id]).suffix(Self.remembered))
                handle(pending, &client, address: address)
            }
        }
    }

    /// One approval, from shown to its end.
    private func handle(
        _ pending: PendingApproval, _ client: inout ApprovalClient<ApprovalHTTP, DeviceKey>,
        address: AuthenticatorAddress
    ) {
        log("\(user): asked: \(pending.sentence)")
        let notice: Notice
        switch Notice.show(
            executable: settings.executable, uid: uid, gid: gid, socket: settings.sessionBus(uid: uid),
            summary: "FingerAuth: \(pending.host) asks", body: pending.sentence + " — touch the reader to approve")
        {
        case let .success(shown): notice = shown
        case let .failure(why):
            // A touch meant for something else must not approve a request nobody saw.
            log(
                "\(user): not shown (\(why.description)): the reader is not armed for it; it stays pending "
                    + "(fingerauth approve shows it on a terminal)")
            return
        }
        var round = ApprovalRound(what: "\(TerminalText.escaped(pending.host))'s request (code \(pending.code))")
        var options = settings.options
        // A second past the approval's expiry: when both come, the expiry ends the round (and
        // says so), not the scan's own deadline ("stays pending" of a request already over).
        options.timeoutSeconds = Int(
            clamping: min(max(pending.expires &- client.clock.now(localNow: SystemClock().now()) &+ 1, 1), 120))
        var scan: FingerScan?
        var event: ApprovalRound.Event?
        switch FingerScan.start(user: user, options: options, issuer: address.issuer) {
        case let .success(started): scan = started
        case let .failure(why): event = .scanFailed(why.message)
        }
        var nextCheck = MonotonicInstant.now().adding(milliseconds: Self.checkMilliseconds)
        while !round.ended {
            if event == nil { event = nextEvent(scan: scan, notice: notice) }
            if event == nil, client.clock.now(localNow: SystemClock().now()) >= pending.expires { event = .expired }
            if event == nil, MonotonicInstant.now() >= nextCheck {
                nextCheck = MonotonicInstant.now().adding(milliseconds: Self.checkMilliseconds)
                if case let .success(now) = client.watch(have: pending.id, wait: 0),
                    !now.contains(where: { $0.id == pending.id })
                {
                    event = .gone
                }
            }
            guard let happened = event else { continue }
            event = nil
            for step in round.handle(happened) {
                switch step {
                case .stopScan: scan?.stop()
                case .closeNotification: notice.close()
                case let .decide(verdict):
                    log("\(user): \(DecisionOutcome(client.decide(pending, verdict), pending).line)")
                case let .log(text): log("\(user): \(text)")
                }
            }
        }
        // The decision is sent: now the helper may take its time to close the reader.
        scan?.settle()
    }

    /// The scan's or the notification's next event, waiting a fifth of a second at most.
    private func nextEvent(scan: FingerScan?, notice: Notice) -> ApprovalRound.Event? {
        if shouldStop { return .leftSeat }
        switch notice.next() {
        case .notMe?: return .notMe
        case .closed?: return .dismissed
        case nil: break
        }
        let slice = MonotonicInstant.now().adding(milliseconds: 200)
        guard let scan, !scan.ended else {
            usleep(200_000)
            return nil
        }
        switch scan.next(until: slice) {
        case .matched?: return .matched
        case .noMatch?: return .noMatch
        case let .failed(why)?: return .scanFailed(why)
        case let .ready(reader)?:
            log("\(user): the reader (\(reader)) is armed for \(user)'s finger")
            return nil
        case .retry?, .missed?, nil: return nil
        }
    }

    /// Logs `why` and waits (in slices, ending early when asked to stop): `pause` seconds plus
    /// up to half again as jitter; the pause then doubles up to `--retry`.
    private func retry(_ why: String, _ pause: inout Int) {
        log("\(user): \(why); retrying in \(pause) s")
        let jitter = Int(SystemRandom().bytes(1)?.first ?? 0) * pause * 500 / 255
        let until = MonotonicInstant.now().adding(milliseconds: Int64(pause) * 1000 + Int64(jitter))
        while !shouldStop && MonotonicInstant.now() < until { usleep(200_000) }
        pause = min(pause * 2, settings.retrySeconds)
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

/// Which reader one login uses, decided before anyone is asked for a finger and before the
/// device key is loaded, so that a closed lid or a reader fprintd holds falls over at once:
///
/// - `lid = skip` and the lid closed (logind, else the ACPI lid files): only a reader on an
///   external port may be used; fprintd's reader counts as built in. None: `FAIL lid-closed`.
/// - `reader = fprintd`: fprintd, which must be root's and hold prints for the user.
/// - `reader = auto`: fprintd when it is installed and holds prints for the user, else
///   libfprint with FingerAuth's prints.
/// - `reader = libfprint` while fprintd runs: "reader in use by fprintd", at once. Under
///   `auto` fprintd may be running only because this helper just asked it (D-Bus activation
///   starts it, and it stays ~30 s), and an idle fprintd holds no reader: so the reader is
///   opened, and only a failure to open it while fprintd runs says "in use by fprintd".
///
/// `open` then claims fprintd's reader or opens libfprint's, in parallel with the
/// authenticator's warm-up.
struct ReaderPlan {
    enum Choice {
        case fprintd(FprintdClient)
        case libfprint(
            prints: [(finger: String, data: [UInt8])], placement: ReaderPlacementRule,
            opened: FingerprintReader?)
    }

    let job: LoginJob
    let choice: Choice
    /// The system bus connection (kept open for fprintd's calls and signals).
    let bus: SystemBus?
    /// Under `auto`: a reader that does not open while fprintd runs is fprintd's.
    var fprintdMayHoldIt = false

    /// Bound of the bus work before the reader opens (connect, lid, fprintd's answers).
    static let busSeconds = 2.0

    /// Decides; `localPrints` were read (and checked in forked children) before: the bus
    /// starts GDBus's thread, and nothing forks after it.
    static func make(
        job: LoginJob, localPrints: Result<[(finger: String, data: [UInt8])], ReaderError>,
        openSeconds: Double
    ) throws(ReaderError) -> ReaderPlan {
        let options = job.options
        let deadline = Deadline.after(seconds: busSeconds)
        var bus: SystemBus?
        var busProblem = "not tried"
        switch SystemBus.connect(socketPath: options.systemBus, deadline: deadline) {
        case let .success(connected): bus = connected
        case let .failure(why): busProblem = why.message
        }
        var lidClosed: String?
        if options.lid == .skip {
            let lid = LidSensor.read(bus: bus, acpiDirectory: options.acpiLidDirectory, deadline: deadline)
            if lid.state == .closed { lidClosed = "lid closed (\(lid.source))" }
        }
        var fprintdRunning = false
        switch options.reader {
        case .fprintd:
            guard let bus else { throw ReaderError(.noReader, "fprintd not reachable: \(busProblem)") }
            if let lidClosed { throw ReaderError(.lidClosed, lidClosed + "; fprintd's reader counts as built in") }
            let client: FprintdClient
            switch FprintdClient.connect(on: bus, deadline: deadline) {
            case let .success(found): client = found
            case let .failure(unavailable): throw unavailable.error
            }
            guard try !client.enrolledFingers(user: job.user, deadline: deadline).get().isEmpty else {
                throw ReaderError(
                    .noPrints,
                    "\(job.user) has no finger enrolled in fprintd (\(Fprintd.enrollCommand(user: job.user, finger: "right-index-finger")))"
                )
            }
            return ReaderPlan(job: job, choice: .fprintd(client), bus: bus)
        case .auto:
            if let bus {
                switch FprintdClient.connect(on: bus, deadline: deadline) {
                case let .success(client):
                    if try !client.enrolledFingers(user: job.user, deadline: deadline).get().isEmpty {
                        if let lidClosed {
                            throw ReaderError(.lidClosed, lidClosed + "; fprintd's reader counts as built in")
                        }
                        return ReaderPlan(job: job, choice: .fprintd(client), bus: bus)
                    }
                case let .failure(unavailable):
                    // A bus name held by someone else than root, or an fprintd that answers
                    // nonsense, is not passed over in silence.
                    if unavailable.error.failure == .deviceError { throw unavailable.error }
                }
            }
        case .libfprint:
            if let bus { fprintdRunning = FprintdClient.isRunning(on: bus, deadline: deadline) }
        }
        let prints = try localPrints.get()
        if fprintdRunning { throw inUseByFprintd }
        let placement = ReaderPlacementRule(
            externalOnly: lidClosed != nil, virtualRemovable: options.virtualReaderRemovable,
            reason: lidClosed ?? "")
        var plan = ReaderPlan(job: job, choice: .libfprint(prints: prints, placement: placement, opened: nil), bus: bus)
        plan.fprintdMayHoldIt = options.reader == .auto && bus != nil
        // With the lid closed the reader is chosen now, so that "none outside" is said at once.
        if lidClosed != nil {
            plan = ReaderPlan(
                job: job,
                choice: .libfprint(
                    prints: prints, placement: placement,
                    opened: try plan.openLibfprint(placement: placement, seconds: openSeconds)),
                bus: bus, fprintdMayHoldIt: plan.fprintdMayHoldIt)
        }
        return plan
    }

    static let inUseByFprintd = ReaderError(
        .busy, "reader in use by fprintd (running on the system bus); set reader = fprintd, or stop fprintd")

    /// Claims fprintd's reader for the user, or opens libfprint's.
    func open(seconds: Double) throws(ReaderError) -> FingerprintBackend {
        switch choice {
        case let .fprintd(client):
            return FprintdBackend(device: try client.claim(user: job.user, deadline: .after(seconds: seconds)))
        case let .libfprint(prints, placement, opened):
            if let opened { return LibfprintBackend(reader: opened, prints: prints) }
            return LibfprintBackend(reader: try openLibfprint(placement: placement, seconds: seconds), prints: prints)
        }
    }

    func openLibfprint(placement: ReaderPlacementRule, seconds: Double) throws(ReaderError) -> FingerprintReader {
        do {
            return try FingerprintReader.open(
                virtualReader: job.options.virtualReader,
                virtualStorageReader: job.options.virtualStorageReader,
                placement: placement, deadline: .after(seconds: seconds))
        } catch {
            if fprintdMayHoldIt, error.failure == .busy || error.failure == .deviceError, let bus,
                FprintdClient.isRunning(on: bus, deadline: .after(seconds: 1))
            {
                throw ReaderPlan.inUseByFprintd
            }
            throw error
        }
    }
}

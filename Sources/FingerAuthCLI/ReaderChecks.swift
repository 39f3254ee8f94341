import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

/// The reader's lines of `fingerauth status`: which backend reads the finger and why
/// (`backend`), the reader it found (`reader`), fprintd (`fprintd`), the laptop's lid
/// (`lid`), and the user's fingers where that backend keeps them (`enrolled`).
enum ReaderChecks {
    static func run(_ context: Context) -> [StatusCheck] {
        let options = context.options
        let choice = ReaderBackendChoice.decide(options, user: context.user, forEnroll: false)
        var checks: [StatusCheck] = []
        switch choice.kind {
        case .fprintd:
            guard let client = choice.fprintd else {
                let problem = choice.fprintdProblem ?? "not reachable"
                checks.append(
                    .fail(
                        "backend", "fprintd (\(choice.why)): \(problem)",
                        fix:
                            "start fprintd (systemctl start fprintd), or set reader = libfprint in \(context.configPath)"
                    ))
                checks.append(.skip("reader", "fprintd not reachable"))
                checks.append(.skip("fprintd", "fprintd not reachable"))
                checks.append(lid(options))
                checks.append(.skip("enrolled", "fprintd not reachable"))
                return checks
            }
            checks.append(
                .pass(
                    "backend",
                    "fprintd (\(choice.why)): root holds \(Fprintd.busName) on \(options.systemBus); "
                        + "fprintd's prints, FingerAuth's device key"))
            checks.append(.pass("reader", "\(client.readerName) (through fprintd)"))
            checks.append(
                .pass("fprintd", "running; it verifies for FingerAuth and releases the reader after each login"))
            checks.append(lid(options))
            if choice.fprintdFingers.isEmpty {
                checks.append(
                    .fail(
                        "enrolled", "\(context.user) has no finger enrolled in fprintd",
                        fix: "fingerauth enroll --user \(context.user) (goes through fprintd), or "
                            + Fprintd.enrollCommand(user: context.user, finger: "right-index-finger")))
            } else {
                checks.append(.pass("enrolled", choice.fprintdFingers.joined(separator: ", ") + " (in fprintd)"))
            }
        case .libfprint, .auto:
            checks.append(
                .pass(
                    "backend", "libfprint (\(choice.why)): FingerAuth's prints, the reader opened by the login helper"))
            let pids = LocalChecks.fprintdProcesses()
            let reader = LocalChecks.reader(options, fprintd: pids)
            checks.append(reader)
            checks.append(LocalChecks.fprintd(pids, readerOK: reader.result == .pass))
            checks.append(lid(options))
            checks.append(LocalChecks.enrolled(context))
        }
        return checks
    }

    /// The lid as the login helper reads it (`lid = skip`).
    static func lid(_ options: Options) -> StatusCheck {
        guard options.lid == .skip else { return .pass("lid", "not looked at (lid = ignore)") }
        let bus = try? SystemBus.connect(socketPath: options.systemBus, deadline: .after(seconds: 2)).get()
        let read = LidSensor.read(bus: bus, acpiDirectory: options.acpiLidDirectory, deadline: .after(seconds: 2))
        switch read.state {
        case .open: return .pass("lid", "open (\(read.source))")
        case .unknown: return .pass("lid", "no lid state found (\(read.source)): the reader is used")
        case .closed:
            return .warn(
                "lid",
                "closed (\(read.source)): a built-in reader is skipped and the password comes at once (lid = skip)",
                fix: "open the lid, use a reader on an external port, or set lid = ignore")
        }
    }
}

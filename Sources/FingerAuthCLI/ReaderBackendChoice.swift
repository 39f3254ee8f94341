import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

/// Which reader the command line uses for a user, by the same rule as the login helper
/// (`reader`): fprintd for `reader = fprintd`; for `auto`, fprintd when it is installed on the
/// system bus (started by D-Bus activation if need be) — for `enroll` — or when it also holds
/// prints for the user — for `status`; libfprint otherwise.
struct ReaderBackendChoice {
    let kind: ReaderChoice
    /// Why this one, in words (`reader = auto: fprintd holds alice's prints`).
    let why: String
    /// fprintd, root's, when it was reached.
    let fprintd: FprintdClient?
    /// The user's fingers in fprintd (empty when fprintd was not asked or holds none).
    let fprintdFingers: [String]
    /// Why fprintd could not be used, when it could not.
    let fprintdProblem: String?

    static let busSeconds = 3.0

    /// `forEnroll`: under `auto`, an installed fprintd takes the enrollment even when it has
    /// no prints for the user yet (the desktop's own tools then see the finger too).
    static func decide(_ options: Options, user: String, forEnroll: Bool) -> ReaderBackendChoice {
        let deadline = Deadline.after(seconds: busSeconds)
        if options.reader == .libfprint {
            return ReaderBackendChoice(
                kind: .libfprint, why: "reader = libfprint", fprintd: nil, fprintdFingers: [],
                fprintdProblem: nil)
        }
        var client: FprintdClient?
        var problem: String?
        var distrusted = false
        switch SystemBus.connect(socketPath: options.systemBus, deadline: deadline) {
        case let .failure(why): problem = why.message
        case let .success(bus):
            switch FprintdClient.connect(on: bus, deadline: deadline) {
            case let .success(found): client = found
            case let .failure(unavailable):
                problem = unavailable.error.message
                distrusted = unavailable.error.failure == .deviceError
            }
        }
        var fingers: [String] = []
        if let client {
            switch client.enrolledFingers(user: user, deadline: deadline) {
            case let .success(found): fingers = found
            case let .failure(error): problem = error.message
            }
        }
        if options.reader == .fprintd {
            return ReaderBackendChoice(
                kind: .fprintd, why: "reader = fprintd", fprintd: client, fprintdFingers: fingers,
                fprintdProblem: problem)
        }
        if client != nil && (forEnroll || !fingers.isEmpty) {
            let why =
                fingers.isEmpty
                ? "reader = auto: fprintd is installed" : "reader = auto: fprintd holds \(user)'s prints"
            return ReaderBackendChoice(
                kind: .fprintd, why: why, fprintd: client, fprintdFingers: fingers, fprintdProblem: nil)
        }
        if distrusted, let problem {
            // A name held by someone else than root: say so, do not fall back in silence.
            return ReaderBackendChoice(
                kind: .fprintd, why: "reader = auto", fprintd: nil, fprintdFingers: [], fprintdProblem: problem)
        }
        let why =
            client == nil
            ? "reader = auto: fprintd not available (\(problem ?? "not installed"))"
            : "reader = auto: fprintd holds no prints for \(user)"
        return ReaderBackendChoice(
            kind: .libfprint, why: why, fprintd: client, fprintdFingers: fingers, fprintdProblem: nil)
    }
}

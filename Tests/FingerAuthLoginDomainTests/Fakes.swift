import FingerAuthCore
import FingerAuthLoginDomain

/// Scripted stand-ins for the login's parts: unit tests of the decision logic only.
final class ScriptedHelper: LoginHelper {
    var messages: [HelperMessage]
    /// The outcome, made from the job the flow sent (so that it can echo the jti or not).
    var outcome: (LoginJob) -> HelperOutcome
    var jobs: [LoginJob] = []
    init(_ messages: [HelperMessage] = [.ready(reader: "virtual")], outcome: @escaping (LoginJob) -> HelperOutcome) {
        self.messages = messages
        self.outcome = outcome
    }
    convenience init(_ messages: [HelperMessage] = [.ready(reader: "virtual")], fixed: HelperOutcome) {
        self.init(messages, outcome: { _ in fixed })
    }
    func run(_ job: LoginJob, relay: (HelperMessage) -> Bool) -> HelperOutcome {
        jobs.append(job)
        for m in messages where !relay(m) { return .conversationFailed }
        return outcome(job)
    }

    /// Accepts, echoing the job's own jti.
    static func accepting() -> ScriptedHelper {
        ScriptedHelper(outcome: { .accepted(jti: $0.jti, kid: "kid-1", finger: "right-index-finger") })
    }
}

struct FakeStore: EnrollmentStore {
    var state: EnrollmentState = .enrolled
    func enrollment(of user: String, options: Options) -> EnrollmentState { state }
}

final class RecordingConversation: Conversation {
    var infos: [String] = []
    var errors: [String] = []
    var failing = false
    func info(_ text: String) -> Bool {
        infos.append(text)
        return !failing
    }
    func error(_ text: String) -> Bool {
        errors.append(text)
        return !failing
    }
}

struct FixedRandom: RandomSource {
    var fails = false
    func bytes(_ n: Int) -> [UInt8]? { fails ? nil : [UInt8](repeating: 7, count: n) }
}
struct KnownUsers: UserDatabase {
    var names: Set<String> = ["alice"]
    func exists(_ u: String) -> Bool { names.contains(u) }
}

func testOptions() -> Options {
    var o = Options()
    o.url = try? AuthenticatorURL.parse("https://auth.example/v1/login").get()
    o.hostID = "host-1"
    o.audience = "aud-1"
    return o
}

/// Attempt records in memory, on a clock the test moves; `failing` makes every update fail
/// (a full /run, a directory that cannot be trusted).
final class FakeLedger: AttemptLedger {
    var records: [String: AttemptRecord] = [:]
    var now: Int64 = 1_000_000
    var failing: String?
    var updates = 0
    func nowMilliseconds() -> Int64 { now }
    func update(_ user: String, _ change: (inout AttemptRecord) -> Void) -> Result<AttemptEntry, AttemptLedgerError> {
        updates += 1
        if let failing { return .failure(AttemptLedgerError(failing)) }
        var record = records[user] ?? AttemptRecord()
        change(&record)
        records[user] = record
        return .success(AttemptEntry(record: record))
    }
}

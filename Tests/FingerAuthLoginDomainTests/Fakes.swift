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

// The flows take their ports as generic parameters (the module's Embedded build needs
// that); the tests mix fakes freely through these erasers.

struct AnyHelper: LoginHelper {
    let base: any LoginHelper
    func run(_ job: LoginJob, relay: (HelperMessage) -> Bool) -> HelperOutcome { base.run(job, relay: relay) }
}

struct AnyStore: EnrollmentStore {
    let base: any EnrollmentStore
    func enrollment(of user: String, options: Options) -> EnrollmentState {
        base.enrollment(of: user, options: options)
    }
}

struct AnyTalk: Conversation {
    let base: any Conversation
    func info(_ text: String) -> Bool { base.info(text) }
    func error(_ text: String) -> Bool { base.error(text) }
}

struct AnyRandom: RandomSource {
    let base: any RandomSource
    func bytes(_ count: Int) -> [UInt8]? { base.bytes(count) }
}

struct AnyUsers: UserDatabase {
    let base: any UserDatabase
    func exists(_ user: String) -> Bool { base.exists(user) }
}

struct AnyLedger: AttemptLedger {
    let base: any AttemptLedger
    func nowMilliseconds() -> Int64 { base.nowMilliseconds() }
    func update(_ user: String, _ change: (inout AttemptRecord) -> Void) -> Result<AttemptEntry, AttemptLedgerError> {
        base.update(user, change)
    }
}

typealias TestLoginFlow = LoginFlow<AnyHelper, AnyStore, AnyTalk, AnyRandom, AnyUsers, AnyLedger>

/// A login flow over any mix of fakes.
func testFlow(
    helper: any LoginHelper, store: any EnrollmentStore, conversation: any Conversation, random: any RandomSource,
    users: any UserDatabase, ledger: any AttemptLedger, hostName: String
) -> TestLoginFlow {
    LoginFlow(
        helper: AnyHelper(base: helper), store: AnyStore(base: store), conversation: AnyTalk(base: conversation),
        random: AnyRandom(base: random), users: AnyUsers(base: users), ledger: AnyLedger(base: ledger),
        hostName: hostName)
}

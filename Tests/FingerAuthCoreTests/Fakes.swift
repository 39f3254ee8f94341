import FingerAuthCore

/// Scripted stand-ins for the login's parts: unit tests of the decision logic only.
final class ScriptedScanner: FingerprintScanner {
    var messages: [ScanMessage]
    var outcome: ScanOutcome
    var calls = 0
    init(_ messages: [ScanMessage] = [.ready(reader: "virtual")], outcome: ScanOutcome) {
        self.messages = messages
        self.outcome = outcome
    }
    func scan(user: String, options: Options, relay: (ScanMessage) -> Bool) -> ScanOutcome {
        calls += 1
        for m in messages where !relay(m) { return .conversationFailed }
        return outcome
    }
}

struct FakeSigner: TokenSigner {
    var kid = "kid-1"
    var fails = false
    func signRS256(_ input: [UInt8]) -> [UInt8]? { fails ? nil : [1, 2, 3] }
}

struct FakeStore: EnrollmentStore {
    var state: EnrollmentState = .enrolled
    var key: Result<TokenSigner, KeyLoadError> = .success(FakeSigner())
    func enrollment(of user: String, options: Options) -> EnrollmentState { state }
    func signer(for user: String, options: Options) -> Result<TokenSigner, KeyLoadError> { key }
}

final class FakeTransport: AuthenticatorTransport {
    var answer: (([UInt8]) -> TransportResult)
    var sent: [[UInt8]] = []
    init(_ answer: @escaping ([UInt8]) -> TransportResult) { self.answer = answer }
    func post(json: [UInt8], options: Options) -> TransportResult {
        sent.append(json)
        return answer(json)
    }

    /// Answers 200 ok for the subject and jti of the token it was sent.
    static func accepting(sub: String? = nil) -> FakeTransport {
        FakeTransport { body in
            guard let json = try? JSONParser().parse(body), let token = json["jwt"]?.stringValue,
                  let jwt = try? CompactJWT(parsing: token) else { return .answered(status: 400, body: []) }
            let answer: JSONValue = .object([("ok", .bool(true)),
                                             ("sub", jwt.claims["sub"] ?? .null), ("jti", jwt.claims["jti"] ?? .null)])
            var bytes = JSONEncoding.encodeBytes(answer)
            if let sub { bytes = JSONEncoding.encodeBytes(.object([("ok", .bool(true)), ("sub", .string(sub)), ("jti", jwt.claims["jti"] ?? .null)])) }
            return .answered(status: 200, body: bytes)
        }
    }
}

final class RecordingConversation: Conversation {
    var infos: [String] = []
    var errors: [String] = []
    var failing = false
    func info(_ text: String) -> Bool { infos.append(text); return !failing }
    func error(_ text: String) -> Bool { errors.append(text); return !failing }
}

struct FixedClock: Clock { var time: Int64 = 1_800_000_000; func now() -> Int64 { time } }
struct FixedRandom: RandomSource { var fails = false; func bytes(_ n: Int) -> [UInt8]? { fails ? nil : [UInt8](repeating: 7, count: n) } }
struct KnownUsers: UserDatabase { var names: Set<String> = ["alice"]; func exists(_ u: String) -> Bool { names.contains(u) } }

func testOptions() -> Options {
    var o = Options()
    o.url = try? AuthenticatorURL.parse("https://auth.example/v1/login").get()
    o.hostID = "host-1"
    o.audience = "aud-1"
    return o
}

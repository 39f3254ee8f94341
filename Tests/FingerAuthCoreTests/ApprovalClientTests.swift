import FingerAuthCore
import XCTest

/// The workstation's half of remote approval over scripted parts: what a delivered approval
/// must look like before it is shown or signed, what the person reads, and that both tokens
/// carry the claims fingerauthd requires, dated by its clock rather than this one.
final class ApprovalClientTests: XCTestCase {
    static let approval: JSONValue = .object([
        ("id", .string("AbCdEfGhIjKlMnOpQrStUv")), ("code", .string("47")), ("user", .string("alice")),
        ("host", .string("web01")), ("service", .string("sudo")), ("rhost", .string("10.0.0.5")),
        ("tty", .string("ssh")), ("nonce", .string("n0nce-n0nce-n0nce-n0nce")), ("expires", .integer(1_000_030)),
    ])

    func changed(_ name: String, _ value: JSONValue) -> JSONValue {
        guard case let .object(members) = Self.approval else { return .null }
        return .object(members.map { $0.0 == name ? (name, value) : $0 })
    }

    func testTheSentenceSaysWhoWhereWhatFromWhereAndTheCode() throws {
        let shown = try XCTUnwrap(PendingApproval(Self.approval))
        XCTAssertEqual(shown.sentence, "alice → sudo on web01, from 10.0.0.5 (ssh), code 47")
        let local = try XCTUnwrap(PendingApproval(changed("rhost", .string(""))))
        XCTAssertEqual(local.sentence, "alice → sudo on web01, from web01 itself (ssh), code 47")
        var console = local
        console.tty = "/dev/pts/3"
        XCTAssertEqual(console.sentence, "alice → sudo on web01, from web01 itself (pts/3), code 47")
        let su = try XCTUnwrap(PendingApproval(changed("service", .string("su")).merged("caller", "mallory")))
        XCTAssertEqual(su.caller, "mallory")
        XCTAssertEqual(su.sentence, "mallory asks to become alice via su on web01, from 10.0.0.5 (ssh), code 47")
        XCTAssertNil(PendingApproval(Self.approval.merged("caller", "mal lory")), "a caller is one word")
        XCTAssertNil(PendingApproval(Self.approval.merged("caller", "m\u{1b}[2J")), "no control character")
    }

    func testAnApprovalOutOfShapeIsNeitherShownNorSigned() {
        XCTAssertNil(PendingApproval(changed("host", .string("web01\u{1b}[2J"))), "a control character")
        XCTAssertNil(PendingApproval(changed("rhost", .string("10.0.0.5\nRESULT 0"))), "a line break")
        XCTAssertNil(PendingApproval(changed("user", .string("Alice"))), "not a FingerAuth user name")
        XCTAssertNil(PendingApproval(changed("code", .string("4a"))), "a code is digits")
        XCTAssertNil(PendingApproval(changed("nonce", .string("short"))), "a nonce is 22+ base64url characters")
        XCTAssertNil(PendingApproval(changed("id", .string("../../v1/keys"))), "an id is base64url")
        XCTAssertNil(PendingApproval(changed("expires", .string("soon"))))
        let answer = WatchAnswer(
            body: Array(
                JSONEncoding.encode(
                    .object([
                        ("approvals", .array([changed("host", .string("a\u{7}b")), Self.approval])),
                        ("server_time", .integer(1_000_000)),
                    ])
                ).utf8))
        XCTAssertEqual(answer?.approvals.map(\.host), ["web01"], "the bad one is dropped, the good one kept")
        XCTAssertEqual(answer?.serverTime, 1_000_000)
    }

    func testTheClockOffsetIsToldOnlyPastAMinute() {
        var clock = ServerClock()
        clock.learn(serverTime: 1_000_000, localNow: 1_000_600)
        XCTAssertTrue(clock.isOff)
        XCTAssertEqual(clock.now(localNow: 1_000_700), 1_000_100)
        XCTAssertEqual(clock.description, "this computer's clock is 600 s ahead of the authenticator's")
        clock.learn(serverTime: 1_000_060, localNow: 1_000_000)
        XCTAssertFalse(clock.isOff)
        clock.learn(serverTime: 1_000_061, localNow: 1_000_000)
        XCTAssertEqual(clock.description, "this computer's clock is 61 s behind the authenticator's")
    }

    func testTheWatchAndTheDecisionAreSignedByTheServersClockWithEveryClaim() throws {
        let transport = ScriptedTransport()
        // The workstation's clock is 600 s ahead; the authenticator says 1_000_000.
        transport.answers = [
            ApprovalReply(status: 200, body: Array("{\"ok\":true}".utf8), date: "Mon, 12 Jan 1970 13:46:40 GMT"),
            ApprovalReply(
                status: 200,
                body: Array(
                    JSONEncoding.encode(
                        .object([("approvals", .array([Self.approval])), ("server_time", .integer(1_000_000))])
                    ).utf8), date: nil),
            ApprovalReply(status: 200, body: Array("{\"status\":\"approved\"}".utf8), date: nil),
        ]
        var client = ApprovalClient(
            transport: transport, signer: FixedSigner(), base: "https://auth.example/x",
            clockURL: "https://auth.example/healthz",
            issuer: "ws-alice", user: "alice", audience: "fingerauth", localClock: FixedClock(value: 1_000_600),
            random: CountingRandom())
        XCTAssertNoThrow(try client.learnClock().get())
        XCTAssertEqual(client.clock.offset, -600)
        let shown = try XCTUnwrap(try client.awaitPending(seconds: 0).get())
        XCTAssertEqual(try client.decide(shown, .approve).get(), .approved)

        XCTAssertEqual(
            transport.sent.map(\.url),
            [
                "https://auth.example/healthz", "https://auth.example/x/v1/approvals/watch?have=-",
                "https://auth.example/x/v1/approvals/AbCdEfGhIjKlMnOpQrStUv/decision",
            ])
        let watch = try CompactJWT(parsing: try XCTUnwrap(transport.sent[1].bearer))
        XCTAssertEqual(watch.header["typ"]?.stringValue, "fingerauth-watch+jwt")
        XCTAssertEqual(watch.header["kid"]?.stringValue, "kid-1")
        XCTAssertEqual(watch.claims["iss"]?.stringValue, "ws-alice")
        XCTAssertEqual(watch.claims["sub"]?.stringValue, "alice")
        XCTAssertEqual(watch.claims["aud"]?.stringValue, "fingerauth")
        XCTAssertEqual(watch.claims["iat"]?.int64Value, 1_000_000)
        XCTAssertEqual(watch.claims["exp"]?.int64Value, 1_000_300)

        let body = try JSONParser().parse(try XCTUnwrap(transport.sent[2].body))
        let decision = try CompactJWT(parsing: try XCTUnwrap(body["jwt"]?.stringValue))
        XCTAssertEqual(decision.header["typ"]?.stringValue, "fingerauth-approval+jwt")
        let claims = decision.claims
        for (name, value) in [
            ("iss", "ws-alice"), ("sub", "alice"), ("aud", "fingerauth"), ("approval", "AbCdEfGhIjKlMnOpQrStUv"),
            ("nonce", "n0nce-n0nce-n0nce-n0nce"), ("host", "web01"), ("service", "sudo"), ("rhost", "10.0.0.5"),
            ("code", "47"), ("decision", "approve"),
        ] {
            XCTAssertEqual(claims[name]?.stringValue, value, name)
        }
        XCTAssertEqual(claims["iat"]?.int64Value, 1_000_000)
        XCTAssertEqual(claims["exp"]?.int64Value, 1_000_030)
        XCTAssertNotEqual(claims["jti"]?.stringValue, watch.claims["jti"]?.stringValue)
    }

    func testAnotherUsersApprovalIsNeitherShownNorDecided() throws {
        let transport = ScriptedTransport()
        let bobs = changed("user", .string("bob"))
        transport.answers = [
            ApprovalReply(
                status: 200, body: Array(JSONEncoding.encode(.object([("approvals", .array([bobs]))])).utf8), date: nil)
        ]
        var client = ApprovalClient(
            transport: transport, signer: FixedSigner(), base: "https://a", clockURL: "https://a/healthz",
            issuer: "ws-alice", user: "alice", audience: "fingerauth", localClock: FixedClock(value: 5),
            random: CountingRandom())
        XCTAssertNil(try client.awaitPending(seconds: 0).get())
        let shownToBob = try XCTUnwrap(PendingApproval(bobs))
        XCTAssertEqual(
            try client.decide(shownToBob, .approve).get(), .refused(status: 403, reason: "not_your_approval"))
        XCTAssertEqual(transport.sent.count, 1, "nothing was signed or sent for bob's")
    }

    func testRefusalsAndClosedApprovalsAreToldApart() throws {
        let transport = ScriptedTransport()
        transport.answers = [
            ApprovalReply(
                status: 409, body: Array("{\"error\":\"approval_closed\",\"status\":\"withdrawn\"}".utf8), date: nil),
            ApprovalReply(status: 401, body: Array("{\"error\":\"expired\"}".utf8), date: nil),
            ApprovalReply(status: 401, body: Array("{\"error\":\"key_revoked\"}".utf8), date: nil),
        ]
        var client = ApprovalClient(
            transport: transport, signer: FixedSigner(), base: "https://a", clockURL: "https://a/healthz",
            issuer: "ws-alice", user: "alice", audience: "fingerauth", localClock: FixedClock(value: 5),
            random: CountingRandom())
        let shown = try XCTUnwrap(PendingApproval(Self.approval))
        XCTAssertEqual(try client.decide(shown, .deny).get(), .closed(status: "withdrawn"))
        XCTAssertEqual(try client.decide(shown, .deny).get(), .refused(status: 401, reason: "expired"))
        guard case let .failure(failure) = client.watch(have: nil, wait: 0) else { return XCTFail("a refused watch") }
        XCTAssertEqual(failure.message, "refused by the authenticator: the watch: 401 key_revoked")
    }
}

/// Answers in order; remembers each request.
final class ScriptedTransport: ApprovalTransport {
    var answers: [ApprovalReply] = []
    var sent: [(method: String, url: String, body: [UInt8]?, bearer: String?)] = []

    func exchange(_ method: String, _ url: String, body: [UInt8]?, bearer: String?, parkSeconds: Int)
        -> Result<ApprovalReply, ApprovalFailure>
    {
        sent.append((method, url, body, bearer))
        guard !answers.isEmpty else { return .failure(ApprovalFailure("no answer scripted")) }
        return .success(answers.removeFirst())
    }
}

struct FixedSigner: TokenSigner {
    var kid: String { "kid-1" }
    func signRS256(_ input: [UInt8]) -> [UInt8]? { [1, 2, 3] }
}

struct FixedClock: Clock {
    let value: Int64
    func now() -> Int64 { value }
}

final class CountingRandom: RandomSource {
    var count: UInt8 = 0
    func bytes(_ n: Int) -> [UInt8]? {
        count &+= 1
        return [UInt8](repeating: count, count: n)
    }
}

extension JSONValue {
    /// The object with member `name` added.
    fileprivate func merged(_ name: String, _ value: String) -> JSONValue {
        guard case let .object(members) = self else { return .null }
        return .object(members + [(name, .string(value))])
    }
}

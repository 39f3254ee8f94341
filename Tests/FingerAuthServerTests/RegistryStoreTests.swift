import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem
import FingerAuthTransport
import XCTest

/// The registry on each backend, one test body for both: SQLite on a real file and
/// PostgreSQL on a real server — keys, host tokens, the write path's claims, audit, pruning.
final class RegistryStoreTests: StoreBackendTestCase {
    func key(_ kid: String, user: String = "alice", host: String = "host1", status: KeyStatus = .active) throws
        -> RegisteredKey
    {
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        return RegisteredKey(kid: kid, user: user, host: host, jwk: maker.jwk, status: status, created: 10)
    }

    func register(_ store: any AuthStorage, _ key: RegisteredKey, jti: String) throws -> RegistrationResult {
        try store.register(
            key, proofJTI: jti, keepUntil: 1000, audit: AuditEvent(event: .register, outcome: .deny), now: 10)
    }

    func claim(
        _ kid: String, jti: String, user: String = "alice", allowed: [KeyStatus] = [.active],
        effect: ClaimEffect = .none
    ) -> WriteItem {
        .claim(
            TokenClaim(
                kid: kid, user: user, host: "host1", jti: jti, keepUntil: 500, allowed: allowed, effect: effect,
                audit: AuditEvent(event: .login, outcome: .deny, peer: "10.0.0.1"), time: 100))
    }

    func testRegistrationOutcomesAndTheirAuditRows() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, key("k1"), jti: "p1"), .created)
            XCTAssertEqual(try register(store, key("k1"), jti: "p2"), .alreadyRegistered)
            XCTAssertEqual(try register(store, key("k1", user: "bob"), jti: "p3"), .conflict)
            XCTAssertEqual(try register(store, key("k1", host: "host2"), jti: "p4"), .conflict)
            XCTAssertEqual(try register(store, key("k2"), jti: "p1"), .proofReplayed)
            XCTAssertNil(try store.registeredKey(kid: "k2"))
            XCTAssertEqual(try store.revoke(kid: "k1", now: 20), .revoked)
            XCTAssertEqual(try store.revoke(kid: "k1", now: 21), .alreadyRevoked)
            XCTAssertEqual(try store.revoke(kid: "nope", now: 21), .unknown)
            XCTAssertEqual(try register(store, key("k1"), jti: "p5"), .revoked)
            XCTAssertEqual(try store.registeredKey(kid: "k1")?.status, .revoked)
            // The same key again writes nothing: no audit row, and its proof's jti is not kept.
            XCTAssertEqual(
                try store.auditEvents().map { $0.outcome.name + ":" + ($0.reason?.text ?? "-") },
                ["accept:-", "deny:kid_conflict", "deny:kid_conflict", "deny:proof_replayed", "deny:key_revoked"])
        }
    }

    func testAKeyAgainWritesNoRowHowEverOftenItComes() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, key("k1"), jti: "p0"), .created)
            for i in 1...50 { XCTAssertEqual(try register(store, key("k1"), jti: "p\(i)"), .alreadyRegistered) }
            XCTAssertEqual(try store.auditEvents().count, 1)
            // Its proofs were not used up: they could still register a new key, which needs them
            // signed by that key (the service checks), so nothing is gained by replaying them.
            XCTAssertEqual(try register(store, key("k2"), jti: "p1"), .created)
        }
    }

    func testTheKeyLimitCountsActiveAndPendingKeysOfOneUserOnOneHost() throws {
        try onEachBackend { store, _ in
            func add(_ kid: String, user: String = "alice", host: String = "host1") throws -> RegistrationResult {
                try store.register(
                    key(kid, user: user, host: host), proofJTI: "j-" + kid, keepUntil: 1000,
                    audit: AuditEvent(event: .register, outcome: .deny), keyLimit: 2, now: 10)
            }
            XCTAssertEqual(try add("k1"), .created)
            XCTAssertEqual(try add("k2"), .created)
            XCTAssertEqual(try add("k3"), .tooManyKeys)
            XCTAssertEqual(try add("k4", user: "bob"), .created)
            XCTAssertEqual(try add("k5", host: "host2"), .created)
            XCTAssertEqual(try store.revoke(kid: "k1", now: 20), .revoked)
            XCTAssertEqual(try add("k6"), .created)
            XCTAssertNil(try store.registeredKey(kid: "k3"))
            XCTAssertEqual(try store.auditEvents().last?.reason, nil)
            XCTAssertEqual(try store.auditEvents().filter { $0.reason?.text == "too_many_keys" }.count, 1)
        }
    }

    func testTheFirstAttestedKeyPinsItsHostsEKAndAnotherEKIsRefused() throws {
        try onEachBackend { store, _ in
            let first = String(repeating: "1", count: 64)
            let second = String(repeating: "2", count: 64)
            func add(_ kid: String, ek: String?, host: String = "host1") throws -> RegistrationResult {
                var attested = try key(kid, host: host)
                attested.kind = .attestedTPM
                attested.ek = ek
                return try register(store, attested, jti: "j-" + kid)
            }
            XCTAssertEqual(try add("k1", ek: first), .created)
            XCTAssertEqual(try store.ekPin(host: "host1")?.summary, "tofu " + first)
            XCTAssertEqual(try add("k2", ek: second), .ekMismatch)
            XCTAssertNil(try store.registeredKey(kid: "k2"))
            XCTAssertEqual(try add("k3", ek: first), .created)
            XCTAssertEqual(try add("k4", ek: second, host: "host2"), .created)
            XCTAssertEqual(try store.registeredKey(kid: "k3")?.ek, first)
            let rows = try store.auditEvents().map { "\($0.event):\($0.outcome):\($0.reason?.text ?? "-")" }
            XCTAssertEqual(
                rows,
                [
                    "ek_pin:accept:tofu: (none) -> tofu \(first)", "register:accept:-",
                    "register:deny:ek_mismatch", "register:accept:-",
                    "ek_pin:accept:tofu: (none) -> tofu \(second)", "register:accept:-",
                ])

            // The admin provisions the second EK for host1: k1 and k3 (the first EK's) are revoked.
            let result = try store.changeEKPin(
                .provision(host: "host1", ek: second, replace: false), admin: "root",
                peer: "local", now: 30)
            guard case let .changed(before, after, revoked) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(before?.source, .tofu)
            XCTAssertEqual(after?.summary, "admin " + second)
            XCTAssertEqual(revoked.map(\.kid), ["k1", "k3"])
            XCTAssertEqual(try store.registeredKey(kid: "k1")?.status, .revoked)
            XCTAssertEqual(try add("k5", ek: second), .created)
            // Another EK over the admin's pin needs --replace.
            let again = try store.changeEKPin(
                .provision(host: "host1", ek: first, replace: false), admin: "root",
                peer: "local", now: 31)
            XCTAssertEqual(again, .provisionedOther(try XCTUnwrap(after)))
            XCTAssertEqual(
                try store.changeEKPin(
                    .provision(host: "host1", ek: second, replace: false), admin: "root",
                    peer: "local", now: 32), .unchanged(try XCTUnwrap(after)))
            guard
                case .changed(_, nil, let gone) = try store.changeEKPin(
                    .reset(host: "host1"), admin: "root", peer: "local",
                    now: 33)
            else { return XCTFail("reset") }
            XCTAssertEqual(gone.map(\.kid), ["k5"])
            XCTAssertNil(try store.ekPin(host: "host1"))
            XCTAssertEqual(
                try store.changeEKPin(.reset(host: "host1"), admin: "root", peer: "local", now: 34), .nothingPinned)
            let pins = try store.auditEvents().filter { $0.event == .ekPin }.map {
                $0.outcome.name + ":" + ($0.reason?.text ?? "-")
            }
            XCTAssertEqual(
                pins.suffix(5),
                [
                    "accept:by root: tofu \(first) -> admin \(second)",
                    "deny:by root: provisioned_other: admin \(second)",
                    "accept:by root: unchanged: admin \(second)",
                    "accept:by root: admin \(second) -> (none)", "deny:by root: nothing_pinned",
                ])
        }
    }

    func testRegistrationComparesNamesByteForByte() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, key("k1", user: "Kate"), jti: "p1"), .created)
            XCTAssertEqual(try register(store, key("k1", user: "\u{212A}ate"), jti: "p2"), .conflict)
        }
    }

    func testClaimsInOneBatch() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, key("k1"), jti: "p1"), .created)
            XCTAssertEqual(try register(store, key("k2", status: .pending), jti: "p2"), .created)
            let outcomes = try store.commit([
                claim("k1", jti: "a"), claim("k1", jti: "a"), claim("k1", jti: "b", user: "bob"), claim("k2", jti: "c"),
                claim("nope", jti: "d"),
                .audit(
                    AuditEvent(
                        event: .login, claimedUser: "alice", outcome: .deny,
                        reason: AuditReason(text: "bad_signature"), verified: false), time: 100),
            ])
            XCTAssertEqual(
                outcomes,
                [
                    .accepted, .refused(.replayed), .refused(.keyChanged), .refused(.keyPending),
                    .refused(.keyChanged), .written,
                ])
            let rows = try store.auditEvents().suffix(6)
            XCTAssertEqual(
                rows.map { $0.outcome.name + ":" + ($0.reason?.text ?? "-") },
                [
                    "accept:-", "deny:replayed", "deny:key_changed", "deny:key_pending", "deny:key_changed",
                    "deny:bad_signature",
                ])
            XCTAssertEqual(rows.map(\.verified), [true, true, true, true, true, false])
            XCTAssertEqual(rows.last?.user, nil)
            XCTAssertEqual(rows.last?.claimedUser, "alice")
            // A refused claim never burns its jti.
            XCTAssertEqual(try store.commit([claim("k1", jti: "c")]), [.accepted])
        }
    }

    func testARevocationCommittedBeforeTheClaimIsSeenByIt() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, key("k1"), jti: "p1"), .created)
            XCTAssertEqual(try store.revoke(kid: "k1", now: 50), .revoked)
            XCTAssertEqual(try store.commit([claim("k1", jti: "late")]), [.refused(.keyRevoked)])
        }
    }

    func testKeyHolderRevocationAndAccessTokensEndWithTheirKey() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, key("k1"), jti: "p1"), .created)
            XCTAssertEqual(
                try store.commit([claim("k1", jti: "g", effect: .accessToken(sha256: "ab", expires: 400))]), [.accepted]
            )
            XCTAssertEqual(try store.accessToken(sha256: "ab")?.keyStatus, .active)
            XCTAssertEqual(
                try store.commit([claim("k1", jti: "r", allowed: [.active, .pending], effect: .revokeKey)]), [.accepted]
            )
            XCTAssertEqual(try store.registeredKey(kid: "k1")?.status, .revoked)
            XCTAssertEqual(try store.accessToken(sha256: "ab")?.keyStatus, .revoked)
            XCTAssertNil(try store.accessToken(sha256: "cd"))
        }
    }

    func testRefusalsOfOneAddressAndWindowAddUpInOneRow() throws {
        try onEachBackend { store, _ in
            for _ in 0..<3 {
                _ = try store.commit([
                    .refusals(peer: "10.0.0.9", window: 300, count: 1000, reason: .rateLimited),
                    .refusals(peer: "10.0.0.8", window: 300, count: 1, reason: .rateLimited),
                ])
            }
            _ = try store.commit([.refusals(peer: "10.0.0.9", window: 600, count: 5, reason: .rateLimited)])
            let rows = try store.auditRecords(AuditFilter(limit: 100))
            XCTAssertEqual(
                rows.map { "\($0.time) \($0.event.peer ?? "-") \($0.event.count)" },
                ["300 10.0.0.9 3000", "300 10.0.0.8 3", "600 10.0.0.9 5"])
            XCTAssertEqual(rows.map(\.event.verified), [false, false, false])
        }
    }

    func testBulkRevocationByUserAndByHost() throws {
        try onEachBackend { store, _ in
            _ = try register(store, key("a1"), jti: "1")
            _ = try register(store, key("a2", host: "host2"), jti: "2")
            _ = try register(store, key("b1", user: "bob"), jti: "3")
            _ = try register(store, key("b2", user: "bob", host: "host2"), jti: "4")
            XCTAssertEqual(try store.revokeKeys(user: "alice", host: nil, now: 30).map(\.kid).sorted(), ["a1", "a2"])
            XCTAssertEqual(try store.revokeKeys(user: "alice", host: nil, now: 31).map(\.kid), [])
            XCTAssertEqual(try store.revokeKeys(user: nil, host: "host2", now: 32).map(\.kid), ["b2"])
            XCTAssertEqual(try store.revokeKeys(user: nil, host: nil, now: 33).map(\.kid), [])
            XCTAssertEqual(try store.listKeys().filter { $0.status == .active }.map(\.kid), ["b1"])
        }
    }

    func testHostTokensAreStoredAsHashesAndRevokedWithTheHostsKeys() throws {
        try onEachBackend { store, _ in
            let a = try store.createHostToken(host: "host1", now: 1)
            let b = try store.createHostToken(host: "host1", now: 2)
            _ = try store.createHostToken(host: "host2", now: 3)
            XCTAssertEqual(a.utf8.count, 43)
            XCTAssertEqual(try store.host(forToken: a), "host1")
            XCTAssertNil(try store.host(forToken: "' OR 1=1 --"))
            let idA = String(try XCTUnwrap(HostToken.hash(a)).prefix(16))
            XCTAssertEqual(try store.listHostTokens().first?.id, idA)
            XCTAssertEqual(try store.revokeHostTokens(id: idA, host: nil, now: 5), HostRevocation(hosts: ["host1"]))
            XCTAssertNil(try store.host(forToken: a))
            XCTAssertEqual(try store.host(forToken: b), "host1")
            XCTAssertEqual(try store.revokeHostTokens(id: "' OR 1=1 --", host: nil, now: 5), HostRevocation())
            _ = try register(store, key("k1"), jti: "p1")
            XCTAssertEqual(
                try store.commit([claim("k1", jti: "g", effect: .accessToken(sha256: "ab", expires: 400))]), [.accepted]
            )
            let revocation = try store.revokeHostTokens(id: nil, host: "host1", now: 6)
            XCTAssertEqual(revocation.hosts, ["host1"])
            XCTAssertEqual(revocation.keys.map(\.kid), ["k1"])
            XCTAssertEqual(revocation.accessTokens, 1)
            XCTAssertNil(try store.host(forToken: b))
            XCTAssertEqual(try store.registeredKey(kid: "k1")?.status, .revoked)
            XCTAssertNil(try store.accessToken(sha256: "ab"))
        }
    }

    func testAuditRowsKeepEveryFieldAndFilter() throws {
        try onEachBackend { store, _ in
            let event = AuditEvent(
                event: .login, user: "alice", host: "h", kid: "k", jti: "j",
                outcome: .deny, reason: AuditReason(text: "expired"), peer: "127.0.0.1")
            try store.audit(event, now: 7)
            XCTAssertEqual(try store.auditEvents(), [event])
            for (t, user) in [(10, "alice"), (20, "bob"), (30, "alice")] as [(Int64, String)] {
                try store.audit(AuditEvent(event: .login, user: user, outcome: .accept), now: t)
            }
            XCTAssertEqual(try store.auditRecords(AuditFilter(user: "alice", limit: 10)).map(\.time), [7, 10, 30])
            XCTAssertEqual(try store.auditRecords(AuditFilter(since: 20, limit: 10)).map(\.time), [20, 30])
            XCTAssertEqual(try store.auditRecords(AuditFilter(limit: 1)).map(\.time), [30])
        }
    }

    func testCommitsAreDurableByConfiguration() throws {
        try onEachBackend { store, database in
            switch database.backend {
            case .sqlite: XCTAssertEqual(try store.durability(), "sqlite WAL synchronous=FULL")
            // The test server runs with fsync=off (speed); synchronous_commit is the store's own.
            case .postgresql: XCTAssertEqual(try store.durability(), "postgresql synchronous_commit=on fsync=off")
            }
        }
    }

    func testPruningUsesTheDatabasesClockAndEachRetention() throws {
        try onEachBackend { store, _ in
            _ = try register(store, key("k1"), jti: "p-old") // keepUntil 1000: long past
            let now = try store.databaseTime()
            XCTAssertLessThan(abs(now - SystemClock().now()), 2)
            let fresh = TokenClaim(
                kid: "k1", user: "alice", host: "host1", jti: "fresh", keepUntil: now + 100, allowed: [.active],
                audit: AuditEvent(event: .login, outcome: .deny), time: now)
            XCTAssertEqual(try store.commit([.claim(fresh)]), [.accepted])
            try store.audit(AuditEvent(event: .login, outcome: .accept), now: now - 10 * 86_400)
            try store.audit(AuditEvent(event: .login, outcome: .deny, verified: false), now: now - 10 * 86_400)
            try store.audit(AuditEvent(event: .login, outcome: .deny, verified: false), now: now - 86_400)
            let result = try store.prune(PrunePolicy(auditRetention: 30 * 86_400, unverifiedAuditRetention: 7 * 86_400))
            XCTAssertEqual(result, PruneResult(replay: 1, accessTokens: 0, audit: 1, unverifiedAudit: 1))
            XCTAssertEqual(try store.commit([.claim(fresh)]), [.refused(.replayed)])
            XCTAssertEqual(store.health(), .available)
            store.close()
            XCTAssertNotEqual(store.health(), .available)
        }
    }

    func testReopeningKeepsDataAndClosedStoreThrows() throws {
        try onEachBackend { store, database in
            XCTAssertEqual(try register(store, key("k2"), jti: "p"), .created)
            store.close()
            XCTAssertThrowsError(try store.listKeys())
            let again = try database.open()
            defer { again.close() }
            XCTAssertEqual(try again.listKeys().map(\.kid), ["k2"])
        }
    }
}

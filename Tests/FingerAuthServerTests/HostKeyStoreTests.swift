import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import XCTest

extension ForwardingStore {
    func hostKey(kid: String) throws(StoreError) -> RegisteredHostKey? { try base.hostKey(kid: kid) }
    func registerHostKey(
        _ key: RegisteredHostKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, now: Int64
    ) throws(StoreError) -> HostKeyRegistration {
        try base.registerHostKey(key, proofJTI: proofJTI, keepUntil: keepUntil, audit: audit, now: now)
    }
    func revokeHostKeys(kid: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredHostKey] {
        try base.revokeHostKeys(kid: kid, host: host, now: now)
    }
    func listHostKeys(host: String?) throws(StoreError) -> [RegisteredHostKey] { try base.listHostKeys(host: host) }
}

/// Host keys on each backend: registration and its outcomes, one active key per host (a new
/// one revokes the last, audited in the same transaction), the admin's revocations, and a
/// host's revocation taking its host keys with it.
final class HostKeyStoreTests: StoreBackendTestCase {
    func hostKey(_ kid: String, host: String = "web01", created: Int64 = 10) throws -> RegisteredHostKey {
        let maker = try XCTUnwrap(TokenMaker(TestKeys.other))
        return RegisteredHostKey(kid: kid, host: host, jwk: maker.jwk, status: .active, created: created)
    }

    func register(_ store: any AuthStorage, _ key: RegisteredHostKey, jti: String, now: Int64 = 10) throws
        -> HostKeyRegistration
    {
        try store.registerHostKey(
            key, proofJTI: jti, keepUntil: 1000,
            audit: AuditEvent(event: .hostKeyRegister, host: key.host, kid: key.kid, outcome: .deny, peer: "10.0.0.9"),
            now: now)
    }

    func rows(_ store: any AuthStorage) throws -> [String] {
        try store.auditEvents().map {
            [$0.event.name, $0.kid ?? "-", $0.outcome.name, $0.reason?.text ?? "-"].joined(separator: ":")
        }
    }

    func testRegistrationOutcomesAndTheirAuditRows() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, hostKey("h1"), jti: "p1"), .created)
            XCTAssertEqual(try register(store, hostKey("h1"), jti: "p2"), .alreadyRegistered)
            XCTAssertEqual(try register(store, hostKey("h1", host: "web02"), jti: "p3"), .conflict)
            XCTAssertEqual(try register(store, hostKey("h2", host: "web02"), jti: "p1"), .proofReplayed)
            XCTAssertNil(try store.hostKey(kid: "h2"))
            let found = try XCTUnwrap(try store.hostKey(kid: "h1"))
            XCTAssertEqual(found, try hostKey("h1"))
            // The same key again writes nothing.
            XCTAssertEqual(
                try rows(store),
                [
                    "host_key_register:h1:accept:-", "host_key_register:h1:deny:kid_conflict",
                    "host_key_register:h2:deny:proof_replayed",
                ])
        }
    }

    func testANewKeyRevokesTheHostsPreviousOneInTheSameTransaction() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, hostKey("old"), jti: "p1"), .created)
            XCTAssertEqual(try register(store, hostKey("other", host: "web02"), jti: "p2"), .created)
            XCTAssertEqual(try register(store, hostKey("new", created: 20), jti: "p3", now: 20), .created)
            let listed = try store.listHostKeys(host: "web01")
            XCTAssertEqual(listed.map(\.kid), ["new", "old"], "newest first")
            XCTAssertEqual(listed.map(\.status), [.active, .revoked])
            XCTAssertEqual(listed.last?.revoked, 20)
            XCTAssertEqual(try store.hostKey(kid: "other")?.status, .active, "another host's key stays")
            XCTAssertEqual(try store.listHostKeys(host: nil).count, 3)
            XCTAssertEqual(
                Array(try rows(store).suffix(2)),
                ["host_key_revoke:old:accept:host_key_replaced", "host_key_register:new:accept:-"])
            XCTAssertEqual(try store.auditEvents().last(where: { $0.event == .hostKeyRevoke })?.peer, "10.0.0.9")
            // A revoked key never comes back.
            XCTAssertEqual(try register(store, hostKey("old"), jti: "p4", now: 30), .revoked)
            XCTAssertEqual(try store.hostKey(kid: "new")?.status, .active)
        }
    }

    func testADeviceKeysKidIsNotTakenAsAHostKey() throws {
        try onEachBackend { store, _ in
            let device = RegisteredKey(
                kid: "shared", user: "alice", host: "web01", jwk: try hostKey("x").jwk, status: .active, created: 5)
            XCTAssertEqual(
                try store.register(
                    device, proofJTI: "d1", keepUntil: 1000, audit: AuditEvent(event: .register, outcome: .deny),
                    now: 5),
                .created)
            XCTAssertEqual(try register(store, hostKey("shared"), jti: "p1"), .conflict)
            XCTAssertNil(try store.hostKey(kid: "shared"))
        }
    }

    func testTheAdminRevokesByKidOrByHostAndAHostsRevocationTakesItsHostKeys() throws {
        try onEachBackend { store, _ in
            XCTAssertEqual(try register(store, hostKey("a"), jti: "p1"), .created)
            XCTAssertEqual(try register(store, hostKey("b", host: "web02"), jti: "p2"), .created)
            XCTAssertEqual(try register(store, hostKey("c", host: "web03"), jti: "p3"), .created)
            XCTAssertEqual(try store.revokeHostKeys(kid: "a", host: nil, now: 40).map(\.kid), ["a"])
            XCTAssertEqual(try store.revokeHostKeys(kid: "a", host: nil, now: 41), [], "already revoked")
            XCTAssertEqual(try store.revokeHostKeys(kid: nil, host: nil, now: 41), [], "nothing named")
            XCTAssertEqual(try store.revokeHostKeys(kid: nil, host: "web02", now: 42).map(\.kid), ["b"])
            XCTAssertEqual(try store.hostKey(kid: "b")?.revoked, 42)
            _ = try store.createHostToken(host: "web03", now: 1)
            let revocation = try store.revokeHostTokens(id: nil, host: "web03", now: 50)
            XCTAssertEqual(revocation.hostKeys.map(\.kid), ["c"])
            XCTAssertEqual(try store.hostKey(kid: "c")?.status, .revoked)
            let events = revocation.auditEvents(peer: "local", admin: nil)
            XCTAssertEqual(
                events.filter { $0.kid == "c" }.map { "\($0.event.name):\($0.reason?.text ?? "-")" },
                ["admin_revoke:host_revoked"])
        }
    }
}

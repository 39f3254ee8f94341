import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import XCTest

/// Offline grants and uploaded offline records on each backend, one body for both: a grant
/// recorded with its login's claim, what "live" means, and the chain of records per key.
final class OfflineStoreTests: StoreBackendTestCase {
    func register(_ store: any AuthStorage, _ kid: String, user: String) throws {
        let maker = try XCTUnwrap(TokenMaker(TestKeys.alice))
        let key = RegisteredKey(kid: kid, user: user, host: "host1", jwk: maker.jwk, status: .active, created: 10)
        XCTAssertEqual(
            try store.register(
                key, proofJTI: "proof-" + kid, keepUntil: 1000, audit: AuditEvent(event: .register, outcome: .deny),
                now: 10), .created)
    }

    func grant(_ gid: String, kid: String = "k1", user: String = "alice", until: Int64 = 10_000) -> IssuedGrant {
        IssuedGrant(
            gid: gid, user: user, host: "host1", kid: kid, issued: 100, notAfter: until, uses: 3, services: ["sudo"],
            rule: 7)
    }

    func login(_ kid: String, jti: String, user: String = "alice", grant: IssuedGrant?) -> WriteItem {
        .claim(
            TokenClaim(
                kid: kid, user: user, host: "host1", jti: jti, keepUntil: 500, allowed: [.active],
                effect: .offlineGrant(grant), audit: AuditEvent(event: .login, outcome: .deny, peer: "10.0.0.1"),
                time: 100))
    }

    func testAGrantIsLiveUntilReplacedWithdrawnExpiredOrItsKeyRevoked() throws {
        try onEachBackend { store, _ in
            try register(store, "k1", user: "alice")
            try register(store, "k2", user: "bob")
            XCTAssertEqual(try store.commit([login("k1", jti: "a", grant: grant("g1"))]), [.accepted])
            XCTAssertEqual(try store.liveGrants(host: nil, now: 200), [grant("g1")])
            XCTAssertEqual(try store.grantStates(gids: ["g1", "nope"], now: 200), ["g1": .live, "nope": .withdrawn])
            XCTAssertEqual(try store.grantStates(gids: ["g1"], now: 10_000), ["g1": .withdrawn])
            // The key's next login replaces it; a login without a grant withdraws it.
            XCTAssertEqual(try store.commit([login("k1", jti: "b", grant: grant("g2"))]), [.accepted])
            XCTAssertEqual(try store.grantStates(gids: ["g1", "g2"], now: 200), ["g1": .withdrawn, "g2": .live])
            XCTAssertEqual(try store.commit([login("k1", jti: "c", grant: nil)]), [.accepted])
            XCTAssertEqual(try store.liveGrants(host: "host1", now: 200), [])
            // A refused claim (replayed jti) records no grant.
            XCTAssertEqual(try store.commit([login("k1", jti: "a", grant: grant("g3"))]), [.refused(.replayed)])
            XCTAssertEqual(try store.grantStates(gids: ["g3"], now: 200), ["g3": .withdrawn])
            // Revoking the key withdraws its grant without a write of its own.
            let bobs = grant("g4", kid: "k2", user: "bob")
            XCTAssertEqual(try store.commit([login("k2", jti: "d", user: "bob", grant: bobs)]), [.accepted])
            XCTAssertEqual(try store.liveGrants(host: "host1", now: 200), [bobs])
            XCTAssertEqual(try store.revoke(kid: "k2", now: 300), .revoked)
            XCTAssertEqual(try store.liveGrants(host: "host1", now: 400), [])
            // An admin's withdrawal, with its audit row.
            XCTAssertEqual(try store.commit([login("k1", jti: "e", grant: grant("g5"))]), [.accepted])
            XCTAssertEqual(try store.liveGrants(host: "other", now: 200), [])
            XCTAssertEqual(
                try store.withdrawGrants(host: "host1", user: "alice", admin: "root", peer: "local", now: 500), 1)
            XCTAssertEqual(try store.grantStates(gids: ["g5"], now: 600), ["g5": .withdrawn])
            let row = try XCTUnwrap(try store.auditEvents().last)
            XCTAssertEqual(row.event, .grantWithdraw)
            XCTAssertEqual(row.reason?.text, "by root: 1 grant withdrawn")
        }
    }

    func testPruningRemovesEndedGrantsAndKeepsLiveOnes() throws {
        try onEachBackend { store, _ in
            try register(store, "k1", user: "alice")
            try register(store, "k2", user: "bob")
            let far: Int64 = 4_000_000_000
            XCTAssertEqual(try store.commit([login("k1", jti: "a", grant: grant("old", until: far))]), [.accepted])
            XCTAssertEqual(try store.commit([login("k1", jti: "b", grant: grant("new", until: far))]), [.accepted])
            let expired = grant("gone", kid: "k2", user: "bob", until: 200)
            XCTAssertEqual(try store.commit([login("k2", jti: "c", user: "bob", grant: expired)]), [.accepted])
            XCTAssertEqual(try store.prune(PrunePolicy()).grants, 2)
            XCTAssertEqual(try store.liveGrants(host: nil, now: 300).map(\.gid), ["new"])
            XCTAssertEqual(
                try store.grantStates(gids: ["old", "new", "gone"], now: 300),
                ["old": .withdrawn, "new": .live, "gone": .withdrawn])
        }
    }
}

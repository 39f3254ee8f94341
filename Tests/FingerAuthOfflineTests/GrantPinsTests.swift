import FingerAuthCore
import FingerAuthCrypto
import FingerAuthOffline
import XCTest

/// The pinned grant keys: the file the helper writes from an answer's `grant_keys` and the
/// keys it trusts from it, each by its own thumbprint.
final class GrantPinsTests: OfflineStateTestCase {
    var store: GrantPins { GrantPins(stateDirectory: root) }

    func jwks(_ keys: [GrantKeyJWK]) -> JSONValue { .array(keys.map { $0.json(kid: "whatever") }) }

    func testNoFileMeansNoKeyIsTrusted() {
        XCTAssertEqual(store.path, root + "/grant-keys")
        XCTAssertTrue(store.keys().isEmpty)
    }

    func testPinningWritesTheKeysReadableByAllAndKeyedByThumbprint() throws {
        let key = try self.key
        let pinned = try store.pin(jwks([key.publicKey]))
        XCTAssertEqual(pinned, [key.kid: key.publicKey])
        XCTAssertEqual(store.keys(), [key.kid: key.publicKey])
        XCTAssertEqual(mode(store.path), 0o644)
        XCTAssertTrue(text(store.path).contains("\"kid\":\"\(key.kid)\""), text(store.path))
        XCTAssertFalse(text(store.path).contains("whatever"), "a served kid is never trusted")
    }

    func testAnArrayWithoutAUsableKeyChangesNothing() throws {
        let key = try self.key
        try store.pin(jwks([key.publicKey]))
        let kept = try store.pin(.array([.object([("kty", .string("RSA")), ("n", .string("AQAB"))])]))
        XCTAssertEqual(kept, [key.kid: key.publicKey])
        XCTAssertEqual(store.keys(), [key.kid: key.publicKey])
        XCTAssertTrue(try store.pin(.string("not an array")).keys.contains(key.kid))
    }

    func testTheSameKeysAreNotWrittenAgain() throws {
        try store.pin(jwks([try key.publicKey]))
        var before = stat()
        XCTAssertEqual(lstat(store.path, &before), 0)
        try store.pin(jwks([try key.publicKey]))
        var after = stat()
        XCTAssertEqual(lstat(store.path, &after), 0)
        XCTAssertEqual(before.st_ino, after.st_ino)
    }

    func testARotationReplacesThePinnedSet() throws {
        let old = try key
        let new = try XCTUnwrap(try GrantSigningKey.generate())
        try store.pin(jwks([old.publicKey]))
        try store.pin(jwks([old.publicKey, new.publicKey]))
        XCTAssertEqual(Set(store.keys().keys), [old.kid, new.kid])
        try store.pin(jwks([new.publicKey]))
        XCTAssertEqual(Set(store.keys().keys), [new.kid])
    }

    func testKeysInSkipsWhatIsNoP256KeyAndReadsAtMostEight() throws {
        var keys: [GrantKeyJWK] = []
        for _ in 0..<9 { keys.append(try GrantSigningKey.generate().publicKey) }
        let mixed: JSONValue = .array([.string("junk"), .null] + keys.map { $0.json(kid: "k") })
        let found = GrantPins.keys(in: mixed)
        XCTAssertEqual(found.count, 6, "the first eight entries, two of them no key")
        XCTAssertEqual(GrantPins.keys(in: .null), [:])
    }

    func testAPinFileOthersMayWriteIsNotTrusted() throws {
        try store.pin(jwks([try key.publicKey]))
        XCTAssertEqual(chmod(store.path, 0o666), 0)
        XCTAssertTrue(store.keys().isEmpty)
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthOffline
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A state directory in a temporary folder with one user's folder in it, a real grant key
/// (P-256, as fingerauthd's) and grants it signs: the offline code is judged on the files it
/// leaves and the refusals it gives.
class OfflineStateTestCase: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-offline-" }

    static let grantKey: GrantSigningKey? = try? GrantSigningKey.generate()
    let user = "alice", host = "laptop", kid = "device-kid"
    let now = Int64(time(nil))

    var key: GrantSigningKey {
        get throws { try XCTUnwrap(Self.grantKey) }
    }
    var pins: [String: GrantKeyJWK] {
        get throws { [try key.kid: try key.publicKey] }
    }
    var paths: StatePaths { StatePaths(root: root, user: user) }
    var book: OfflineBook { OfflineBook(stateDirectory: root, user: user, host: host) }

    override func setUp() {
        super.setUp()
        XCTAssertEqual(mkdir(root + "/users", 0o755), 0)
        XCTAssertEqual(mkdir(paths.userDirectory, 0o700), 0)
    }

    func clock(_ wall: Int64? = nil, boot: String = "boot-1", ms: Int64 = 1_000_000) -> GrantClockReading {
        GrantClockReading(wall: wall ?? now, bootID: boot, bootMilliseconds: ms)
    }

    func grant(
        gid: String = "g-1", user: String? = nil, uses: Int = 3, services: [String] = ["sudo"], ttl: Int64 = 3600
    ) -> OfflineGrant {
        OfflineGrant(
            gid: gid, user: user ?? self.user, host: host, kid: kid, issuedAt: now - 10, notAfter: now + ttl,
            ttlSeconds: ttl, uses: uses, services: services)
    }

    func token(_ grant: OfflineGrant, signedBy signer: GrantSigningKey? = nil) throws -> String {
        let signer = try signer ?? key
        let input = CompactJWT.signingInput(header: OfflineGrant.header(grantKeyID: signer.kid), claims: grant.claims)
        return CompactJWT.serialize(signingInput: input, signature: try XCTUnwrap(signer.signES256(input)))
    }

    /// Keeps a grant as an online answer would, failing the test when it is refused.
    @discardableResult
    func keepGrant(_ grant: OfflineGrant? = nil) throws -> OfflineGrant {
        let kept = book.keep(try token(grant ?? self.grant()), kid: kid, pins: try pins, now: clock())
        return try kept.get()
    }

    func mode(_ path: String) -> UInt32 {
        var st = stat()
        XCTAssertEqual(lstat(path, &st), 0, path)
        return UInt32(st.st_mode) & 0o7777
    }

    func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    func text(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 1 << 16)
        let n = read(fd, &bytes, bytes.count)
        return n > 0 ? String(decoding: bytes[0..<n], as: UTF8.self) : ""
    }

    /// Writes `text` at an absolute `path` with exactly `mode`.
    func put(_ path: String, _ text: String, mode: mode_t = 0o600) {
        write(String(path.dropFirst(root.count + 1)), text, mode: mode)
    }
}

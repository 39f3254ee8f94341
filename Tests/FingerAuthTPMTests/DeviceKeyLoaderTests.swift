import FingerAuthCore
import FingerAuthCrypto
import FingerAuthKeyFormats
import FingerAuthTPM
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// TPM key files on disk, without a TPM: how they are written, named and refused. A key's
/// name (its kid) is read from its public area alone, so that a cleared TPM's key can still
/// be revoked by it.
final class DeviceKeyLoaderTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-tpmkey-" }

    static let modulus: [UInt8] = [0xD1] + [UInt8](repeating: 0x5A, count: 255)

    /// A device key's TPM2B_PUBLIC as the TPM returns it: the template with its modulus.
    static var publicArea: [UInt8] {
        let template = TPMWire.unsized(TPMTemplates.signingKey(restricted: false)) ?? []
        return TPMWire.sized(Array(template.dropLast(2)) + TPMWire.sized(modulus))
    }

    var keyPath: String { root + "/device.key" }

    func saved() throws -> TPMKeyFile {
        let file = TPMKeyFile(publicArea: Self.publicArea, privateArea: TPMWire.sized([1, 2, 3, 4]))
        try DeviceKeyLoader.save(file, to: keyPath)
        return file
    }

    func testTheDefaultTPMIsTheKernelsResourceManager() {
        XCTAssertEqual(DeviceKeyLoader(tcti: nil).tcti, "device:/dev/tpmrm0")
        XCTAssertEqual(DeviceKeyLoader(tcti: "swtpm:port=2321").tcti, "swtpm:port=2321")
    }

    func testAKeyFileIsSavedAsTSS2PEMRootOnly() throws {
        let file = try saved()
        var st = stat()
        XCTAssertEqual(lstat(keyPath, &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o600)
        XCTAssertEqual(st.st_uid, 0)
        let pem = try SafeFileBytes.read(keyPath)
        XCTAssertEqual(PEMBlock.label(pem), "TSS2 PRIVATE KEY")
        XCTAssertEqual(try TPMKeyFile(der: try XCTUnwrap(PEMBlock.decode(pem)).der), file)
    }

    func testAKeyIsNamedByTheThumbprintOfItsPublicAreaWithoutATPM() throws {
        try saved()
        let described = try XCTUnwrap(DeviceKeyLoader.describe(keyPath))
        XCTAssertEqual(described.store, "tpm")
        XCTAssertEqual(described.kid, Digest.thumbprint(of: JWK(n: Self.modulus, e: [1, 0, 1])))
    }

    func testTheKeysPublicAreaGivesTheJWKsModulusAndExponent() throws {
        let key = try TPMDeviceKey.publicKey(of: try saved())
        XCTAssertEqual(key.modulus, Self.modulus)
        XCTAssertEqual(key.exponentBytes, [1, 0, 1])
    }

    func testAKeyFileWhosePublicAreaIsNoRSAKeyIsABadKeyFile() {
        let file = TPMKeyFile(publicArea: TPMTemplates.storagePrimary, privateArea: [0, 0])
        XCTAssertThrowsError(try TPMDeviceKey.publicKey(of: file)) { error in
            let tpm = error as? TPMError
            XCTAssertEqual(tpm?.kind, .badKeyFile)
            XCTAssertEqual(tpm?.description, "the key file's public area: key type 0x23 is not RSA")
        }
    }

    func testNothingIsNamedForAMissingOrDamagedFile() {
        XCTAssertNil(DeviceKeyLoader.describe(root + "/missing.key"))
        write("damaged.key", "-----BEGIN TSS2 PRIVATE KEY-----\nAAAA\n-----END TSS2 PRIVATE KEY-----\n", mode: 0o600)
        XCTAssertNil(DeviceKeyLoader.describe(root + "/damaged.key"))
    }

    func testADamagedTSS2FileIsRefusedByName() {
        write("damaged.key", "-----BEGIN TSS2 PRIVATE KEY-----\nAAAA\n-----END TSS2 PRIVATE KEY-----\n", mode: 0o600)
        guard case let .failure(why) = DeviceKeyLoader(tcti: nil).load(root + "/damaged.key") else {
            return XCTFail("a damaged key loaded")
        }
        XCTAssertEqual(why.message, root + "/damaged.key: not a usable TSS2 PRIVATE KEY")
    }

    func testAKeyFileOthersCanReadIsRefusedBeforeAnyTPMIsAsked() throws {
        try saved()
        XCTAssertEqual(chmod(keyPath, 0o644), 0)
        guard case let .failure(why) = DeviceKeyLoader(tcti: "device:/nonexistent/tpm").load(keyPath) else {
            return XCTFail("an open key file loaded")
        }
        XCTAssertEqual(why.message, keyPath + ": mode 644 is too open")
        XCTAssertNil(DeviceKeyLoader.describe(keyPath))
    }

    func testAKeyWhoseTPMDoesNotAnswerSaysSoAndWhatToCheck() throws {
        try saved()
        let loader = DeviceKeyLoader(tcti: "device:/nonexistent/tpmrm9")
        guard case let .failure(why) = loader.load(keyPath) else { return XCTFail("loaded without a TPM") }
        XCTAssertTrue(
            why.message.hasPrefix(
                keyPath + ": TPM key unusable (unreachable): connect to device:/nonexistent/tpmrm9: "),
            why.message)
        XCTAssertTrue(why.message.hasSuffix("; " + TPMError(.unreachable, "").advice), why.message)
        XCTAssertEqual(loader.tpmFailure(keyPath)?.kind, .unreachable)
    }

    func testAFileKeyIsNoTPMFailure() {
        write("file.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", mode: 0o600)
        XCTAssertNil(DeviceKeyLoader(tcti: "device:/nonexistent").tpmFailure(root + "/file.key"))
    }
}

/// A file's bytes through libc, for the assertions.
enum SafeFileBytes {
    struct Unreadable: Error {}

    static func read(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw Unreadable() }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 1 << 16)
        let n = Glibc.read(fd, &bytes, bytes.count)
        guard n >= 0 else { throw Unreadable() }
        return Array(bytes[0..<n])
    }
}

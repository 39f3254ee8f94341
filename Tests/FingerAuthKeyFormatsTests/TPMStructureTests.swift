import FingerAuthKeyFormats
import XCTest

/// The TPM structures the authenticator reads from a host (a device key's public area, the
/// certify attestation, the signature): built here byte by byte as a TPM marshals them, and
/// every refusal with the field it names.
final class TPMStructureTests: XCTestCase {
    static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func u32(_ v: UInt32) -> [UInt8] { u16(UInt16(v >> 16)) + u16(UInt16(v & 0xFFFF)) }
    static func u64(_ v: UInt64) -> [UInt8] { u32(UInt32(v >> 32)) + u32(UInt32(v & 0xFFFF_FFFF)) }
    static func sized(_ b: [UInt8]) -> [UInt8] { u16(UInt16(b.count)) + b }

    static let modulus: [UInt8] = [0xC5] + [UInt8](repeating: 0x11, count: 255)
    static let signing: TPMObjectAttributes = [.fixedTPM, .fixedParent, .sensitiveDataOrigin, .userWithAuth, .sign]

    /// A TPMT_PUBLIC of an RSA key as FingerAuth's device key template makes it.
    static func rsaPublic(
        type: UInt16 = TPMAlgorithm.rsa, nameAlg: UInt16 = TPMAlgorithm.sha256,
        attributes: TPMObjectAttributes = signing, policy: [UInt8] = [],
        symmetric: [UInt8] = u16(TPMAlgorithm.null),
        scheme: [UInt8] = u16(TPMAlgorithm.rsassa) + u16(TPMAlgorithm.sha256),
        keyBits: UInt16 = 2048, exponent: UInt32 = 0, modulus: [UInt8] = modulus
    ) -> [UInt8] {
        u16(type) + u16(nameAlg) + u32(attributes.rawValue) + sized(policy) + symmetric + scheme + u16(keyBits)
            + u32(exponent) + sized(modulus)
    }

    func parseError(_ bytes: [UInt8]) -> String? {
        do {
            _ = try TPMPublicKey(tpmt: bytes)
            return nil
        } catch {
            return error.description
        }
    }

    // MARK: - TPMT_PUBLIC

    func testADeviceKeysPublicAreaParsesWithEveryField() throws {
        let bytes = Self.rsaPublic()
        let key = try TPMPublicKey(tpmt: bytes)
        XCTAssertEqual(key.nameAlgorithm, TPMAlgorithm.sha256)
        XCTAssertEqual(key.attributes, Self.signing)
        XCTAssertEqual(key.authPolicy, [])
        XCTAssertEqual(key.symmetric.algorithm, TPMAlgorithm.null)
        XCTAssertEqual(key.scheme.algorithm, TPMAlgorithm.rsassa)
        XCTAssertEqual(key.scheme.hash, TPMAlgorithm.sha256)
        XCTAssertEqual(key.keyBits, 2048)
        XCTAssertEqual(key.modulus, Self.modulus)
        XCTAssertEqual(key.marshalled, bytes, "the exact bytes, for the key's Name")
    }

    func testTheTPM2BFormMustHoldExactlyOnePublicArea() throws {
        let inner = Self.rsaPublic()
        XCTAssertEqual(try TPMPublicKey(tpm2b: Self.sized(inner)), try TPMPublicKey(tpmt: inner))
        XCTAssertThrowsError(try TPMPublicKey(tpm2b: Self.sized(inner) + [0])) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "TPM2B_PUBLIC: 1 bytes after its end")
        }
        XCTAssertThrowsError(try TPMPublicKey(tpm2b: Array(Self.sized(inner).dropLast()))) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "TPM2B_PUBLIC: structure ends early")
        }
    }

    func testTheDefaultExponentIsSixtyFiveThousandFiveHundredThirtySeven() throws {
        XCTAssertEqual(try TPMPublicKey(tpmt: Self.rsaPublic(exponent: 0)).exponentBytes, [0x01, 0x00, 0x01])
        XCTAssertEqual(try TPMPublicKey(tpmt: Self.rsaPublic(exponent: 3)).exponentBytes, [0x03])
        XCTAssertEqual(try TPMPublicKey(tpmt: Self.rsaPublic(exponent: 0x0100_0001)).exponentBytes, [1, 0, 0, 1])
    }

    func testAKeyThatIsNotRSAWithSHA256NamesIsRefusedByItsField() {
        XCTAssertEqual(parseError(Self.rsaPublic(type: 0x0023)), "key type 0x23 is not RSA")
        XCTAssertEqual(parseError(Self.rsaPublic(nameAlg: 0x0004)), "name algorithm 0x4 is not SHA-256")
    }

    func testKeySizesOtherThanTwoThreeAndFourThousandBitsAreRefused() {
        XCTAssertEqual(parseError(Self.rsaPublic(keyBits: 1024)), "RSA key of 1024 bits")
        let big = [UInt8](repeating: 0x80, count: 384)
        XCTAssertNoThrow(try TPMPublicKey(tpmt: Self.rsaPublic(keyBits: 3072, modulus: big)))
    }

    func testAModulusOfTheWrongLengthOrWithALeadingZeroBitIsRefused() {
        XCTAssertEqual(
            parseError(Self.rsaPublic(modulus: Array(Self.modulus.dropLast()))),
            "modulus of 255 bytes for a 2048-bit key")
        var low = Self.modulus
        low[0] = 0x7F
        XCTAssertEqual(parseError(Self.rsaPublic(modulus: low)), "modulus of 256 bytes for a 2048-bit key")
        XCTAssertEqual(
            parseError(Self.rsaPublic(modulus: [UInt8](repeating: 0x80, count: 513))), "unique: 513 bytes, at most 512")
    }

    func testASymmetricAlgorithmCarriesItsKeyBitsAndMode() throws {
        let key = try TPMPublicKey(
            tpmt: Self.rsaPublic(
                symmetric: Self.u16(TPMAlgorithm.aes) + Self.u16(128) + Self.u16(TPMAlgorithm.cfb),
                scheme: Self.u16(TPMAlgorithm.null)))
        XCTAssertEqual(key.symmetric.algorithm, TPMAlgorithm.aes)
        XCTAssertEqual(key.symmetric.keyBits, 128)
        XCTAssertEqual(key.symmetric.mode, TPMAlgorithm.cfb)
        XCTAssertEqual(key.scheme.algorithm, TPMAlgorithm.null)
        XCTAssertEqual(key.scheme.hash, 0)
    }

    func testAnAuthPolicyLongerThanADigestIsRefused() {
        XCTAssertEqual(
            parseError(Self.rsaPublic(policy: [UInt8](repeating: 1, count: 65))), "authPolicy: 65 bytes, at most 64")
        XCTAssertNoThrow(try TPMPublicKey(tpmt: Self.rsaPublic(policy: [UInt8](repeating: 1, count: 32))))
    }

    func testAPublicAreaCutShortNamesTheFieldItEndsIn() {
        let bytes = Self.rsaPublic()
        XCTAssertEqual(parseError(Array(bytes.prefix(3))), "nameAlg: structure ends early")
        XCTAssertEqual(parseError(Array(bytes.prefix(6))), "objectAttributes: structure ends early")
        XCTAssertEqual(parseError(Array(bytes.dropLast())), "unique: structure ends early")
        XCTAssertEqual(parseError(bytes + [0, 0]), "TPMT_PUBLIC: 2 bytes after its end")
        XCTAssertEqual(parseError([]), "type: structure ends early")
    }

    func testAttributeNamesAreListedInTheSpecificationsOrder() {
        XCTAssertEqual(Self.signing.names, ["fixedTPM", "fixedParent", "sensitiveDataOrigin", "userWithAuth", "sign"])
        XCTAssertEqual(TPMObjectAttributes([.restricted, .decrypt, .noDA]).names, ["noDA", "restricted", "decrypt"])
        XCTAssertEqual(TPMObjectAttributes(rawValue: 1).names, [], "a reserved bit has no name")
    }

    func testPublicKeysCompareByTheirBytes() throws {
        let a = try TPMPublicKey(tpmt: Self.rsaPublic(exponent: 0))
        let b = try TPMPublicKey(tpmt: Self.rsaPublic(exponent: 65537))
        XCTAssertEqual(a.exponentBytes, b.exponentBytes)
        XCTAssertNotEqual(a, b, "the same key marshalled otherwise has another Name")
    }

    // MARK: - TPMS_ATTEST

    static func attest(
        magic: UInt32 = TPMCertifyInfo.generatedValue, type: UInt16 = TPMCertifyInfo.attestCertify, safe: UInt8 = 1,
        extraData: [UInt8] = [1, 2, 3]
    ) -> [UInt8] {
        u32(magic) + u16(type) + sized([0x00, 0x0B] + [UInt8](repeating: 0xAA, count: 32)) + sized(extraData)
            + u64(123_456) + u32(7) + u32(8) + [safe] + u64(0x2_0000_0000) + sized([0x00, 0x0B, 0x42])
            + sized([0x00, 0x0B, 0x43])
    }

    func testACertifyAttestationParsesWithEveryField() throws {
        let info = try TPMCertifyInfo(Self.attest())
        XCTAssertEqual(info.extraData, [1, 2, 3])
        XCTAssertEqual(info.clock, 123_456)
        XCTAssertEqual(info.resetCount, 7)
        XCTAssertEqual(info.restartCount, 8)
        XCTAssertTrue(info.safe)
        XCTAssertEqual(info.firmwareVersion, 0x2_0000_0000)
        XCTAssertEqual(info.name, [0x00, 0x0B, 0x42])
        XCTAssertEqual(info.qualifiedName, [0x00, 0x0B, 0x43])
        XCTAssertEqual(info.qualifiedSigner.count, 34)
    }

    func testAnAttestationNotMadeByATPMOrNotACertifyIsRefused() {
        XCTAssertThrowsError(try TPMCertifyInfo(Self.attest(magic: 0x1234))) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "magic 0x1234 is not TPM_GENERATED_VALUE")
        }
        XCTAssertThrowsError(try TPMCertifyInfo(Self.attest(type: 0x8018))) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "attestation type 0x8018 is not TPM_ST_ATTEST_CERTIFY")
        }
        XCTAssertThrowsError(try TPMCertifyInfo(Self.attest(safe: 2))) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "safe is 2")
        }
        XCTAssertThrowsError(try TPMCertifyInfo(Self.attest(extraData: [UInt8](repeating: 0, count: 65)))) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "extraData: 65 bytes, at most 64")
        }
        XCTAssertThrowsError(try TPMCertifyInfo(Self.attest() + [9])) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "TPMS_ATTEST: 1 bytes after its end")
        }
    }

    // MARK: - TPMT_SIGNATURE

    func testAnRSASSASignatureGivesItsBytes() throws {
        let bytes = Self.u16(TPMAlgorithm.rsassa) + Self.u16(TPMAlgorithm.sha256) + Self.sized([9, 8, 7])
        XCTAssertEqual(try TPMSignature(bytes).signature, [9, 8, 7])
    }

    func testASignatureOfAnotherSchemeHashOrNoBytesIsRefused() {
        let cases: [([UInt8], String)] = [
            (Self.u16(0x0016) + Self.u16(TPMAlgorithm.sha256) + Self.sized([1]), "signature scheme 0x16 is not RSASSA"),
            (Self.u16(TPMAlgorithm.rsassa) + Self.u16(0x0004) + Self.sized([1]), "signature hash 0x4 is not SHA-256"),
            (Self.u16(TPMAlgorithm.rsassa) + Self.u16(TPMAlgorithm.sha256) + Self.sized([]), "empty signature"),
            (
                Self.u16(TPMAlgorithm.rsassa) + Self.u16(TPMAlgorithm.sha256) + Self.sized([1]) + [0],
                "TPMT_SIGNATURE: 1 bytes after its end"
            ),
        ]
        for (bytes, text) in cases {
            XCTAssertThrowsError(try TPMSignature(bytes), text) {
                XCTAssertEqual(($0 as? TPMParseError)?.description, text)
            }
        }
    }

    // MARK: - the key file's DER

    func testAKeyFileWithLongAreasUsesTheTwoByteLengthForm() throws {
        let file = TPMKeyFile(publicArea: [UInt8](repeating: 1, count: 0x1234), privateArea: [2])
        let der = file.der
        XCTAssertEqual(Array(der.prefix(4)), [0x30, 0x82, UInt8((der.count - 4) >> 8), UInt8((der.count - 4) & 0xFF)])
        XCTAssertEqual(try TPMKeyFile(der: der).publicArea.count, 0x1234)
    }

    func testAKeyFileRefusalNamesTheField() {
        let der = TPMKeyFile(publicArea: [1], privateArea: [2]).der
        var oid = der
        oid[9] = 0x04
        XCTAssertThrowsError(try TPMKeyFile(der: oid)) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "type: not a loadable TPM key")
        }
        XCTAssertThrowsError(try TPMKeyFile(der: der + [0])) {
            XCTAssertEqual(($0 as? TPMParseError)?.description, "TPMKey: 1 bytes after its end")
        }
    }
}

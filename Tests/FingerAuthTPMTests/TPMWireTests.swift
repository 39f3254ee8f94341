import CTSS2
import FingerAuthKeyFormats
import FingerAuthTPM
import XCTest

/// The TPM wire bytes FingerAuth builds itself: the sizes, the templates of the objects it
/// makes (checked against libtss2-mu, which the TPM's own parser mirrors), and the DER
/// trimming of an NV certificate.
final class TPMWireTests: XCTestCase {
    func testSizedAndUnsizedAreInverse() {
        XCTAssertEqual(TPMWire.sized([1, 2, 3]), [0, 3, 1, 2, 3])
        XCTAssertEqual(TPMWire.sized([]), [0, 0])
        XCTAssertEqual(TPMWire.unsized([0, 3, 1, 2, 3]), [1, 2, 3])
        XCTAssertEqual(TPMWire.unsized([0, 0]), [])
    }

    func testUnsizedRefusesASizeThatDoesNotFit() {
        XCTAssertNil(TPMWire.unsized([0, 4, 1, 2, 3]))
        XCTAssertNil(TPMWire.unsized([0, 2, 1, 2, 3]))
        XCTAssertNil(TPMWire.unsized([0]))
    }

    func testSizedNeverWritesMoreThanASizeCanSay() {
        let wire = TPMWire.sized([UInt8](repeating: 7, count: 70_000))
        XCTAssertEqual(Array(wire.prefix(2)), [0xFF, 0xFF])
        XCTAssertEqual(wire.count, 2 + 0xFFFF)
    }

    func testIntegersAreBigEndian() {
        XCTAssertEqual(TPMWire.u16(0x1234), [0x12, 0x34])
        XCTAssertEqual(TPMWire.u32(0x0102_0304), [1, 2, 3, 4])
        XCTAssertEqual(TPMWire.u32([9, 1, 2, 3, 4], 1), 0x0102_0304)
        XCTAssertEqual(TPMWire.u32([1, 2, 3], 0), 0, "too short reads as 0")
        XCTAssertEqual(TPMWire.u32([1, 2, 3, 4], -1), 0)
    }

    /// The template's TPMT_PUBLIC fields: type, nameAlg and objectAttributes.
    func head(_ template: [UInt8]) throws -> (type: UInt16, nameAlg: UInt16, attributes: TPMObjectAttributes) {
        let inner = try XCTUnwrap(TPMWire.unsized(template))
        return (
            UInt16(inner[0]) << 8 | UInt16(inner[1]), UInt16(inner[2]) << 8 | UInt16(inner[3]),
            TPMObjectAttributes(rawValue: TPMWire.u32(inner, 4))
        )
    }

    func testEveryTemplateIsATPM2BPublicLibtssReadsWhole() throws {
        for (name, template) in [
            ("storage primary", TPMTemplates.storagePrimary),
            ("device key", TPMTemplates.signingKey(restricted: false)),
            ("attestation key", TPMTemplates.signingKey(restricted: true)),
            ("endorsement key", TPMTemplates.endorsementKey),
        ] {
            let decoded = try TPMWire.decode(template, into: TPM2B_PUBLIC(), Tss2_MU_TPM2B_PUBLIC_Unmarshal)
            XCTAssertEqual(try TPMWire.encode(decoded, Tss2_MU_TPM2B_PUBLIC_Marshal), template, name)
        }
    }

    func testDecodeRefusesTrailingBytesAsABadKeyFile() {
        let template = TPMTemplates.signingKey(restricted: false)
        XCTAssertThrowsError(try TPMWire.decode(template + [0], into: TPM2B_PUBLIC(), Tss2_MU_TPM2B_PUBLIC_Unmarshal)) {
            XCTAssertEqual($0 as? TPMError, TPMError(.badKeyFile, "a TPM structure does not parse"))
        }
        XCTAssertThrowsError(try TPMWire.decode([0, 9, 0], into: TPM2B_PUBLIC(), Tss2_MU_TPM2B_PUBLIC_Unmarshal))
    }

    func testTheDeviceKeySignsOnlyAndIsBoundToThisTPM() throws {
        let key = try head(TPMTemplates.signingKey(restricted: false))
        XCTAssertEqual(key.type, TPMAlgorithm.rsa)
        XCTAssertEqual(key.nameAlg, TPMAlgorithm.sha256)
        XCTAssertEqual(key.attributes, [.fixedTPM, .fixedParent, .sensitiveDataOrigin, .userWithAuth, .sign])
        let ak = try head(TPMTemplates.signingKey(restricted: true))
        XCTAssertEqual(ak.attributes, key.attributes.union(.restricted), "the AK signs only what the TPM made")
    }

    func testTheStoragePrimaryIsARestrictedDecryptionKeyOnP256() throws {
        let primary = try head(TPMTemplates.storagePrimary)
        XCTAssertEqual(primary.type, TPMTemplates.ecc)
        XCTAssertTrue(primary.attributes.isSuperset(of: [.restricted, .decrypt, .noDA, .fixedTPM, .fixedParent]))
        XCTAssertFalse(primary.attributes.contains(.sign))
    }

    func testTheEndorsementKeyIsTheTCGDefaultTemplate() throws {
        let ek = TPMTemplates.endorsementKey
        let head = try head(ek)
        XCTAssertEqual(
            head.attributes, [.fixedTPM, .fixedParent, .sensitiveDataOrigin, .adminWithPolicy, .restricted, .decrypt])
        let inner = try XCTUnwrap(TPMWire.unsized(ek))
        XCTAssertEqual(Array(inner[8..<10]), [0x00, 0x20], "a SHA-256 policy")
        XCTAssertEqual(Array(inner[10..<42]), TPMTemplates.endorsementPolicy)
        XCTAssertEqual(Array(inner.suffix(258)), [0x01, 0x00] + [UInt8](repeating: 0, count: 256), "the zero unique")
    }

    // MARK: - the EK certificate's DER

    func testTrimmedDERCutsThePaddingAfterTheCertificate() {
        let short: [UInt8] = [0x30, 0x03, 1, 2, 3]
        XCTAssertEqual(TPMAttestor.trimmedDER(short + [0xFF, 0xFF]), short)
        let oneByte: [UInt8] = [0x30, 0x81, 0x80] + [UInt8](repeating: 5, count: 0x80)
        XCTAssertEqual(TPMAttestor.trimmedDER(oneByte + [0, 0, 0]), oneByte)
        let twoBytes: [UInt8] = [0x30, 0x82, 0x01, 0x00] + [UInt8](repeating: 6, count: 0x100)
        XCTAssertEqual(TPMAttestor.trimmedDER(twoBytes + [0]), twoBytes)
    }

    func testTrimmedDERLeavesWhatItCannotReadAsItIs() {
        XCTAssertEqual(TPMAttestor.trimmedDER([0x31, 0x01, 0, 0]), [0x31, 0x01, 0, 0], "not a SEQUENCE")
        XCTAssertEqual(TPMAttestor.trimmedDER([0x30, 0x10, 1, 2]), [0x30, 0x10, 1, 2], "longer than the bytes")
        XCTAssertEqual(TPMAttestor.trimmedDER([0x30, 0x83, 0, 0, 1]), [0x30, 0x83, 0, 0, 1], "three length bytes")
        XCTAssertEqual(TPMAttestor.trimmedDER([0x30, 0]), [0x30, 0], "too short to judge")
    }
}

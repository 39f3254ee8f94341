import FingerAuthCore
import FingerAuthKeyFormats
import XCTest

/// The `TSS2 PRIVATE KEY` body: what is written parses back, and the parser refuses what a
/// forged or damaged file would carry.
final class TPMKeyFileTests: XCTestCase {
    let publicArea: [UInt8] = [0x00, 0x04, 0x00, 0x01, 0x00, 0x0B]
    let privateArea: [UInt8] = [0x00, 0x03] + [UInt8](repeating: 0xAB, count: 3)

    func testRoundTripAndTheLayoutOfTpm2OpensslFiles() throws {
        let file = TPMKeyFile(publicArea: publicArea, privateArea: privateArea)
        let der = file.der
        // SEQUENCE { OID 2.23.133.10.1.3, [0] BOOLEAN TRUE, INTEGER 0x40000001, OCTET STRING, OCTET STRING }
        XCTAssertEqual(
            Array(der.prefix(15)),
            [
                0x30, UInt8(der.count - 2), 0x06, 0x06, 0x67, 0x81, 0x05, 0x0A, 0x01, 0x03,
                0xA0, 0x03, 0x01, 0x01, 0xFF,
            ])
        XCTAssertEqual(Array(der[15..<21]), [0x02, 0x04, 0x40, 0x00, 0x00, 0x01])
        XCTAssertEqual(try TPMKeyFile(der: der), file)
        let withoutAuth = TPMKeyFile(
            emptyAuth: false, parent: 0x8100_0001, publicArea: publicArea, privateArea: privateArea)
        XCTAssertEqual(try TPMKeyFile(der: withoutAuth.der), withoutAuth)
        let large = TPMKeyFile(
            publicArea: [UInt8](repeating: 1, count: 300), privateArea: [UInt8](repeating: 2, count: 200))
        XCTAssertEqual(try TPMKeyFile(der: large.der), large)
    }

    func testRefusesAnotherTypeTrailingBytesAndLoosePrefixes() {
        let der = TPMKeyFile(publicArea: publicArea, privateArea: privateArea).der
        var otherOID = der
        otherOID[9] = 0x04 // 2.23.133.10.1.4: an importable key, not loadable
        var trailing = der
        trailing.append(0x00)
        var inner = der
        inner[1] += 1
        inner.append(0x00) // a byte inside the SEQUENCE after privkey
        var wrongTag = der
        wrongTag[0] = 0x31
        for (name, bytes) in [
            ("other OID", otherOID), ("trailing", trailing), ("inner trailing", inner),
            ("SET", wrongTag), ("empty", []), ("truncated", Array(der.dropLast(2))),
        ] {
            XCTAssertThrowsError(try TPMKeyFile(der: bytes), name)
        }
    }

    func testRefusesNonMinimalLengthsAndParentsBeyond32Bits() {
        // Length 0x81 0x05: long form where the short form fits.
        let oid: [UInt8] = [0x06, 0x06, 0x67, 0x81, 0x05, 0x0A, 0x01, 0x03]
        func sequence(_ body: [UInt8]) -> [UInt8] { [0x30, UInt8(body.count)] + body }
        let octets: [UInt8] = [0x04, 0x01, 0x00, 0x04, 0x01, 0x00]
        XCTAssertThrowsError(try TPMKeyFile(der: sequence(oid + [0x02, 0x81, 0x01, 0x01] + octets)), "long form")
        XCTAssertThrowsError(
            try TPMKeyFile(der: sequence(oid + [0x02, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01] + octets)), "40 bits")
        XCTAssertThrowsError(try TPMKeyFile(der: sequence(oid + [0x02, 0x01, 0x80] + octets)), "negative")
        XCTAssertThrowsError(try TPMKeyFile(der: sequence(oid + [0x02, 0x02, 0x00, 0x01] + octets)), "leading zero")
        XCTAssertThrowsError(
            try TPMKeyFile(der: sequence(oid + [0xA0, 0x03, 0x01, 0x01, 0x01, 0x02, 0x01, 0x01] + octets)),
            "BOOLEAN neither 0 nor 0xFF")
        XCTAssertEqual(try TPMKeyFile(der: sequence(oid + [0x02, 0x01, 0x01] + octets)).parent, 1)
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthKeyFormats
import XCTest

/// The TPM structures of a key attestation, parsed from what a real TPM (swtpm, through
/// tpm2-tools) produced, and the checks over them: Names, attributes, the AK's signature
/// over TPM2_Certify, strictness against truncation, trailing bytes and wrong tags.
final class TPMAttestationTests: XCTestCase {
    /// tpm2_create -G rsa2048:rsassa-sha256:null -a fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign
    static let deviceKey = hex(
        "01180001000b00040072000000100014000b0800000000000100ce2095aac46eb3bdf855f1a30ae4df56ccd0798d1df3"
            + "f8385f767919e07b331810b78f2d4f0b44e87a13f3e67c0bbfeb7f07c3bc2a2cdfcae42cd2e54e0fe6908603f43a80bf"
            + "e51b2bf75699da3cb9c69e4bb452c607845aecc5fb240ee5bd30af64ab7e28656a17d813c162a880b5f6311b915284e1"
            + "b4a8372c509b8454b09742a5d44dbb9d166deb7d13abf2dfd40a923d5f0f87324b0b2f2e2841abbb24267a657134d924"
            + "ee9a81d481d8d7162c82ef2e93e694317b7c3020b44f4e1a6796c37c38103d1ad781f5027093f9053466bdd8f444aa90"
            + "6f48199f9b049e844395084d78da0c649869c314b0e0401a91dbcf21cd76162a11671f3dd0efeeee4cf5")
    /// Its Name as tpm2_load -n printed it.
    static let deviceKeyName = hex("000b9150047434e2af6e827404a9ff8642a966be27ae27ea39274d3139aaa1eba0c7")
    /// tpm2_createak -G rsa -g sha256 -s rsassa
    static let attestationKey = hex(
        "01180001000b00050072000000100014000b0800000000000100c9e48ec593b598b6119777ca385b376679e8675fa9d3"
            + "0d796430a5ca6c6a3bbf8a84a6b4bc96ed1609ea29f4276d258c1e054ee882bfb9dbca0fa1a482beae69034bf92ced1f"
            + "9710370c311638888562584185eb0d19dff92c8137a7b4333e12c5dc0e0b7c36dbb4dfe1b1b8bd8650a4746e2640ad30"
            + "43be8b3cb8c2d3baadf302a438add555a99d3ca590737671187a54ecacc2fd6c0c4c9d852b6dd4089a5f697d4d222a06"
            + "001be383051808de4842dcf4f2b1992f4fb9c5db2ffe936b68aaaa1c0c620ddcf04d099f9698e98eb61cf24472edb432"
            + "e79a3331848a88c611f22d10726fa20784063c161f46f8a90a02a0e7badf551ef78a8bd550880c36f56d")
    static let attestationKeyName = hex("000b077d816476712dfe344a09913623bf378ceca002f0fe1495141f9a9d1d159c18")
    /// tpm2_certify -c device key -C AK -g sha256 -f tss (qualifying data 00ff55aa, the tools' own)
    static let certify = hex(
        "ff54434780170022000be97daa887487fd481724cd762f3677aefbed53c21f2b091908a7d31261cd2b68000400ff55aa"
            + "000000000000288500000002000000000120191023001636360022000b9150047434e2af6e827404a9ff8642a966be27"
            + "ae27ea39274d3139aaa1eba0c70022000bac8fdef8030828c83cedc5976bd0a823aee5a86643cc25d2b7374d3546d731" + "2d")
    static let certifySignature = hex(
        "0014000b01003bd695cc741befa989cc804cedfff63bd7824873d611e567ea8afa7e4a562e297057d172e4fac26c30f9"
            + "c7a9d5a5028e70028ebcb934d822f6054f8bc71885a74a8e64fe8975d70132642e3b16096ba19373af361365e6852766"
            + "cf7206f565a7a80923cb49c3193063ad4cd3881ad9fb712a8676578e1f3443d0efba44c561dde69eb0ed36c6721a48c2"
            + "d9a63f9ac666db7badbe6320acdf58e1575a20e4b647256d08cb8b20154325a6c740cee82e8ad4828ae7543ff937d0dd"
            + "3c06cf374b637c4eac015fbaa9e7d1ec90c459790986be638296fe74b334b31c71565317c2c5f0a518d83b70a0141290"
            + "45bdccad09d3670f0595501e7b5ba88fe04306a6b2d6")

    static func hex(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        for c in text.utf8 {
            let v: UInt8 = c >= 97 ? c - 87 : c - 48
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return out
    }

    func testRealTPMStructuresParseAndTheirNamesMatchTheTools() throws {
        let key = try TPMPublicKey(tpm2b: Self.deviceKey)
        XCTAssertEqual(key.keyBits, 2048)
        XCTAssertEqual(key.modulus.count, 256)
        XCTAssertEqual(key.exponentBytes, [1, 0, 1])
        XCTAssertEqual(
            key.attributes.names, ["fixedTPM", "fixedParent", "sensitiveDataOrigin", "userWithAuth", "sign"])
        XCTAssertEqual(TPMAttestation.name(of: key), Self.deviceKeyName)
        let ak = try TPMPublicKey(tpm2b: Self.attestationKey)
        XCTAssertEqual(TPMAttestation.name(of: ak), Self.attestationKeyName)
        XCTAssertNil(TPMAttestation.attestationKeyRefusal(ak))
        let info = try TPMCertifyInfo(Self.certify)
        XCTAssertEqual(info.extraData, [0x00, 0xFF, 0x55, 0xAA])
        XCTAssertEqual(info.name, Self.deviceKeyName)
    }

    func testTheAKsCertificationVerifiesAndNamesTheKeyAndTheNonce() throws {
        let key = try TPMPublicKey(tpm2b: Self.deviceKey)
        let ak = try TPMPublicKey(tpm2b: Self.attestationKey)
        XCTAssertNil(
            TPMAttestation.certifyRefusal(
                attest: Self.certify, signature: Self.certifySignature, ak: ak,
                key: key, nonce: [0x00, 0xFF, 0x55, 0xAA]))
        XCTAssertEqual(
            TPMAttestation.certifyRefusal(
                attest: Self.certify, signature: Self.certifySignature, ak: ak,
                key: key, nonce: [0x00, 0xFF, 0x55, 0xAB]), .nonceMismatch)
        XCTAssertEqual(
            TPMAttestation.certifyRefusal(
                attest: Self.certify, signature: Self.certifySignature, ak: key,
                key: key, nonce: [0x00, 0xFF, 0x55, 0xAA]), .certifyInvalid)
        XCTAssertEqual(
            TPMAttestation.certifyRefusal(
                attest: Self.certify, signature: Self.certifySignature, ak: ak,
                key: ak, nonce: [0x00, 0xFF, 0x55, 0xAA]), .keyMismatch)
        var tampered = Self.certify
        tampered[tampered.count - 1] ^= 1
        XCTAssertEqual(
            TPMAttestation.certifyRefusal(
                attest: tampered, signature: Self.certifySignature, ak: ak,
                key: key, nonce: [0x00, 0xFF, 0x55, 0xAA]), .certifyInvalid)
    }

    func testAttributesDecideWhatIsAnAKAndWhatIsADeviceKey() throws {
        let key = try TPMPublicKey(tpm2b: Self.deviceKey)
        let jwk = JWK(n: [0] + key.modulus, e: [1, 0, 1])
        XCTAssertNil(TPMAttestation.deviceKeyRefusal(key, jwk: jwk))
        XCTAssertEqual(
            TPMAttestation.deviceKeyRefusal(key, jwk: JWK(n: key.modulus.reversed(), e: [1, 0, 1])), .keyMismatch)
        // The device key is not restricted: it is no AK.
        XCTAssertEqual(TPMAttestation.attestationKeyRefusal(key), .akInvalid)
        // The AK is restricted: it may not be registered as a device key.
        let ak = try TPMPublicKey(tpm2b: Self.attestationKey)
        XCTAssertEqual(TPMAttestation.deviceKeyRefusal(ak, jwk: JWK(n: ak.modulus, e: [1, 0, 1])), .keyAttributes)
        for bit: UInt32 in [1 << 1, 1 << 4, 1 << 5] {
            let loose = try TPMPublicKey(tpm2b: Self.withAttributes(Self.deviceKey) { $0 & ~bit })
            XCTAssertEqual(TPMAttestation.deviceKeyRefusal(loose, jwk: jwk), .keyAttributes, "without bit \(bit)")
        }
        let decrypting = try TPMPublicKey(tpm2b: Self.withAttributes(Self.deviceKey) { $0 | 1 << 17 })
        XCTAssertEqual(TPMAttestation.deviceKeyRefusal(decrypting, jwk: jwk), .keyAttributes)
    }

    func testParsersRefuseTruncationTrailingBytesAndOtherTags() {
        for cut in [0, 1, 2, 10, Self.deviceKey.count - 1] {
            XCTAssertThrowsError(try TPMPublicKey(tpm2b: Array(Self.deviceKey.prefix(cut))), "cut at \(cut)")
        }
        XCTAssertThrowsError(try TPMPublicKey(tpm2b: Self.deviceKey + [0]))
        XCTAssertThrowsError(try TPMCertifyInfo(Self.certify + [0]))
        XCTAssertThrowsError(try TPMCertifyInfo(Array(Self.certify.dropLast())))
        var quote = Self.certify
        quote[5] = 0x18 // TPM_ST_ATTEST_QUOTE
        XCTAssertThrowsError(try TPMCertifyInfo(quote))
        var magic = Self.certify
        magic[0] = 0
        XCTAssertThrowsError(try TPMCertifyInfo(magic))
        XCTAssertThrowsError(try TPMSignature(Array(Self.certifySignature.dropLast())))
        var scheme = Self.certifySignature
        scheme[1] = 0x16 // RSAPSS
        XCTAssertThrowsError(try TPMSignature(scheme))
        var ecc = Self.deviceKey
        ecc[3] = 0x23 // TPM_ALG_ECC
        XCTAssertThrowsError(try TPMPublicKey(tpm2b: ecc))
    }

    func testKDFaIsDeterministicAndSizedAndConstantTimeEqualComparesBytes() throws {
        let a = try TPMCredential.kdfa(key: [1, 2, 3], label: "STORAGE", contextU: [4], contextV: [], bits: 128)
        let b = try TPMCredential.kdfa(key: [1, 2, 3], label: "STORAGE", contextU: [4], contextV: [], bits: 128)
        let c = try TPMCredential.kdfa(key: [1, 2, 3], label: "INTEGRITY", contextU: [4], contextV: [], bits: 128)
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, c)
        XCTAssertEqual(a.count, 16)
        XCTAssertEqual(try TPMCredential.kdfa(key: [9], label: "X", contextU: [], contextV: [], bits: 520).count, 65)
        XCTAssertTrue(TPMAttestation.constantTimeEqual([1, 2], [1, 2]))
        XCTAssertFalse(TPMAttestation.constantTimeEqual([1, 2], [1, 3]))
        XCTAssertFalse(TPMAttestation.constantTimeEqual([1, 2], [1, 2, 0]))
    }

    /// The TPM2B_PUBLIC with its objectAttributes (bytes 6..<10 after the size) changed.
    static func withAttributes(_ tpm2b: [UInt8], _ change: (UInt32) -> UInt32) -> [UInt8] {
        var bytes = tpm2b
        let at = 2 + 4
        let old =
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        let new = change(old)
        bytes[at] = UInt8(new >> 24)
        bytes[at + 1] = UInt8((new >> 16) & 0xFF)
        bytes[at + 2] = UInt8((new >> 8) & 0xFF)
        bytes[at + 3] = UInt8(new & 0xFF)
        return bytes
    }
}

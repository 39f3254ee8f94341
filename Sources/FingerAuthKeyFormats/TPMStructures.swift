/// The TPM 2.0 structures an attested registration carries (TPM 2.0 Library, Part 2),
/// parsed strictly from the big-endian wire form: every length checked against what is
/// left, every algorithm and tag known, nothing left over. Pure Swift, no crypto, so that
/// the fuzzer can drive it; the checks that need digests and signatures live in
/// FingerAuthCrypto (`TPMAttestation`).

/// Why bytes did not parse as the structure asked for.
package struct TPMParseError: Error, Equatable, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// TPM_ALG_ID values this code knows.
package enum TPMAlgorithm {
    package static let rsa: UInt16 = 0x0001
    package static let sha256: UInt16 = 0x000B
    package static let null: UInt16 = 0x0010
    package static let rsassa: UInt16 = 0x0014
    package static let aes: UInt16 = 0x0006
    package static let cfb: UInt16 = 0x0043
}

/// TPMA_OBJECT bits (Part 2, 8.3).
package struct TPMObjectAttributes: OptionSet, Sendable, Equatable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    package static let fixedTPM = TPMObjectAttributes(rawValue: 1 << 1)
    package static let stClear = TPMObjectAttributes(rawValue: 1 << 2)
    package static let fixedParent = TPMObjectAttributes(rawValue: 1 << 4)
    package static let sensitiveDataOrigin = TPMObjectAttributes(rawValue: 1 << 5)
    package static let userWithAuth = TPMObjectAttributes(rawValue: 1 << 6)
    package static let adminWithPolicy = TPMObjectAttributes(rawValue: 1 << 7)
    package static let noDA = TPMObjectAttributes(rawValue: 1 << 10)
    package static let encryptedDuplication = TPMObjectAttributes(rawValue: 1 << 11)
    package static let restricted = TPMObjectAttributes(rawValue: 1 << 16)
    package static let decrypt = TPMObjectAttributes(rawValue: 1 << 17)
    package static let sign = TPMObjectAttributes(rawValue: 1 << 18)

    /// The attribute names, for refusal reasons and `keys list`.
    package var names: [String] {
        let all: [(TPMObjectAttributes, String)] = [
            (.fixedTPM, "fixedTPM"), (.stClear, "stClear"), (.fixedParent, "fixedParent"),
            (.sensitiveDataOrigin, "sensitiveDataOrigin"), (.userWithAuth, "userWithAuth"),
            (.adminWithPolicy, "adminWithPolicy"), (.noDA, "noDA"),
            (.encryptedDuplication, "encryptedDuplication"), (.restricted, "restricted"),
            (.decrypt, "decrypt"), (.sign, "sign"),
        ]
        return all.filter { contains($0.0) }.map { $0.1 }
    }
}

/// A TPMT_PUBLIC of an RSA key, with the exact bytes it was parsed from (its Name is the
/// digest of those bytes, so they are kept rather than re-marshalled).
package struct TPMPublicKey: Equatable, Sendable {
    package let nameAlgorithm: UInt16
    package let attributes: TPMObjectAttributes
    package let authPolicy: [UInt8]
    /// TPMT_SYM_DEF_OBJECT: algorithm, and key bits and mode unless the algorithm is NULL.
    package let symmetric: (algorithm: UInt16, keyBits: UInt16, mode: UInt16)
    /// TPMT_RSA_SCHEME: scheme, and its hash unless the scheme is NULL.
    package let scheme: (algorithm: UInt16, hash: UInt16)
    package let keyBits: UInt16
    /// The public exponent; the wire's 0 means the default 65537.
    package let exponent: UInt32
    /// The modulus, big-endian.
    package let modulus: [UInt8]
    /// The TPMT_PUBLIC bytes (without the TPM2B size).
    package let marshalled: [UInt8]

    package static func == (a: TPMPublicKey, b: TPMPublicKey) -> Bool { a.marshalled == b.marshalled }

    /// The exponent as the minimal big-endian bytes a JWK's `e` carries.
    package var exponentBytes: [UInt8] {
        let value = exponent == 0 ? 65537 : exponent
        let bytes: [UInt8] = [
            UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF),
        ]
        return Array(bytes.drop { $0 == 0 })
    }

    /// Parses a TPM2B_PUBLIC (size, then TPMT_PUBLIC) of type RSA; nothing may follow it.
    package init(tpm2b bytes: [UInt8]) throws(TPMParseError) {
        var reader = TPMReader(bytes)
        let inner = try reader.sized("TPM2B_PUBLIC")
        try reader.end("TPM2B_PUBLIC")
        try self.init(tpmt: inner)
    }

    /// Parses a TPMT_PUBLIC of type RSA; nothing may follow it.
    package init(tpmt bytes: [UInt8]) throws(TPMParseError) {
        var reader = TPMReader(bytes)
        let type = try reader.u16("type")
        guard type == TPMAlgorithm.rsa else { throw TPMParseError("key type 0x\(hex(type)) is not RSA") }
        nameAlgorithm = try reader.u16("nameAlg")
        guard nameAlgorithm == TPMAlgorithm.sha256 else {
            throw TPMParseError("name algorithm 0x\(hex(nameAlgorithm)) is not SHA-256")
        }
        attributes = TPMObjectAttributes(rawValue: try reader.u32("objectAttributes"))
        authPolicy = try reader.sized("authPolicy", max: 64)
        let symmetricAlgorithm = try reader.u16("symmetric")
        if symmetricAlgorithm == TPMAlgorithm.null {
            symmetric = (symmetricAlgorithm, 0, 0)
        } else {
            symmetric = (symmetricAlgorithm, try reader.u16("symmetric keyBits"), try reader.u16("symmetric mode"))
        }
        let schemeAlgorithm = try reader.u16("scheme")
        scheme =
            schemeAlgorithm == TPMAlgorithm.null
            ? (schemeAlgorithm, 0) : (schemeAlgorithm, try reader.u16("scheme hash"))
        keyBits = try reader.u16("keyBits")
        guard keyBits == 2048 || keyBits == 3072 || keyBits == 4096 else {
            throw TPMParseError("RSA key of \(keyBits) bits")
        }
        exponent = try reader.u32("exponent")
        modulus = try reader.sized("unique", max: 512)
        guard modulus.count * 8 == Int(keyBits), let first = modulus.first, first & 0x80 != 0 else {
            throw TPMParseError("modulus of \(modulus.count) bytes for a \(keyBits)-bit key")
        }
        try reader.end("TPMT_PUBLIC")
        marshalled = bytes
    }
}

/// A TPMS_ATTEST of type TPM_ST_ATTEST_CERTIFY: what the AK signed about a certified key.
package struct TPMCertifyInfo: Equatable, Sendable {
    /// TPM_GENERATED_VALUE: the TPM itself made this structure (a restricted key signs
    /// nothing that starts with it unless the TPM built it).
    package static let generatedValue: UInt32 = 0xFF54_4347
    package static let attestCertify: UInt16 = 0x8017

    package let qualifiedSigner: [UInt8]
    /// The qualifying data the caller passed to TPM2_Certify: the server's nonce.
    package let extraData: [UInt8]
    package let clock: UInt64
    package let resetCount: UInt32
    package let restartCount: UInt32
    package let safe: Bool
    package let firmwareVersion: UInt64
    /// The certified object's Name (nameAlg, then the digest of its TPMT_PUBLIC).
    package let name: [UInt8]
    package let qualifiedName: [UInt8]

    /// Parses a TPMS_ATTEST; refuses another magic, another type or trailing bytes.
    package init(_ bytes: [UInt8]) throws(TPMParseError) {
        var reader = TPMReader(bytes)
        let magic = try reader.u32("magic")
        guard magic == Self.generatedValue else {
            throw TPMParseError("magic 0x\(hex(magic)) is not TPM_GENERATED_VALUE")
        }
        let type = try reader.u16("type")
        guard type == Self.attestCertify else {
            throw TPMParseError("attestation type 0x\(hex(type)) is not TPM_ST_ATTEST_CERTIFY")
        }
        qualifiedSigner = try reader.sized("qualifiedSigner", max: 66)
        extraData = try reader.sized("extraData", max: 64)
        clock = try reader.u64("clock")
        resetCount = try reader.u32("resetCount")
        restartCount = try reader.u32("restartCount")
        let safeByte = try reader.u8("safe")
        guard safeByte <= 1 else { throw TPMParseError("safe is \(safeByte)") }
        safe = safeByte == 1
        firmwareVersion = try reader.u64("firmwareVersion")
        name = try reader.sized("name", max: 66)
        qualifiedName = try reader.sized("qualifiedName", max: 66)
        try reader.end("TPMS_ATTEST")
    }
}

/// A TPMT_SIGNATURE of scheme RSASSA with SHA-256: the signature bytes.
package struct TPMSignature: Equatable, Sendable {
    package let signature: [UInt8]

    package init(_ bytes: [UInt8]) throws(TPMParseError) {
        var reader = TPMReader(bytes)
        let algorithm = try reader.u16("sigAlg")
        guard algorithm == TPMAlgorithm.rsassa else {
            throw TPMParseError("signature scheme 0x\(hex(algorithm)) is not RSASSA")
        }
        let hash = try reader.u16("hash")
        guard hash == TPMAlgorithm.sha256 else { throw TPMParseError("signature hash 0x\(hex(hash)) is not SHA-256") }
        signature = try reader.sized("sig", max: 512)
        guard !signature.isEmpty else { throw TPMParseError("empty signature") }
        try reader.end("TPMT_SIGNATURE")
    }
}

/// Big-endian reads over bytes, each failing with the field's name when too few are left.
struct TPMReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func u8(_ field: String) throws(TPMParseError) -> UInt8 {
        guard offset < bytes.count else { throw TPMParseError("\(field): structure ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ field: String) throws(TPMParseError) -> UInt16 {
        UInt16(try u8(field)) << 8 | UInt16(try u8(field))
    }

    mutating func u32(_ field: String) throws(TPMParseError) -> UInt32 {
        UInt32(try u16(field)) << 16 | UInt32(try u16(field))
    }

    mutating func u64(_ field: String) throws(TPMParseError) -> UInt64 {
        UInt64(try u32(field)) << 32 | UInt64(try u32(field))
    }

    /// A TPM2B: a 16-bit size, then that many bytes (at most `max`).
    mutating func sized(_ field: String, max: Int = 4096) throws(TPMParseError) -> [UInt8] {
        let size = Int(try u16(field))
        guard size <= max else { throw TPMParseError("\(field): \(size) bytes, at most \(max)") }
        guard size <= bytes.count - offset else { throw TPMParseError("\(field): structure ends early") }
        defer { offset += size }
        return Array(bytes[offset..<(offset + size)])
    }

    func end(_ structure: String) throws(TPMParseError) {
        guard offset == bytes.count else {
            throw TPMParseError("\(structure): \(bytes.count - offset) bytes after its end")
        }
    }
}

private func hex<T: BinaryInteger>(_ value: T) -> String { String(value, radix: 16) }

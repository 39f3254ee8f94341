/// The body of a `TSS2 PRIVATE KEY` PEM (the TPM 2.0 key file format of tpm2-openssl and
/// openssl_tpm2_engine): a DER SEQUENCE of the key type OID (2.23.133.10.1.3, a loadable
/// key), an optional `emptyAuth` flag, the parent handle, and the key's TPM2B_PUBLIC and
/// TPM2B_PRIVATE. The private part is wrapped by the parent — the TPM's storage key — so the
/// file is useless to anyone without that TPM. Pure Swift: the fuzzer and the unit tests
/// drive it; the TPM work is in FingerAuthTPM.
package struct TPMKeyFile: Equatable, Sendable {
    /// The PEM label.
    package static let pemLabel = "TSS2 PRIVATE KEY"
    /// TPM_RH_OWNER: the key's parent is the storage primary made from the owner seed.
    package static let ownerParent: UInt32 = 0x4000_0001
    /// DER of OID 2.23.133.10.1.3 (id-loadablekey).
    static let loadableKeyOID: [UInt8] = [0x06, 0x06, 0x67, 0x81, 0x05, 0x0A, 0x01, 0x03]

    package var emptyAuth: Bool
    package var parent: UInt32
    /// TPM2B_PUBLIC, with its size.
    package var publicArea: [UInt8]
    /// TPM2B_PRIVATE, with its size.
    package var privateArea: [UInt8]

    package init(
        emptyAuth: Bool = true, parent: UInt32 = TPMKeyFile.ownerParent, publicArea: [UInt8], privateArea: [UInt8]
    ) {
        self.emptyAuth = emptyAuth
        self.parent = parent
        self.publicArea = publicArea
        self.privateArea = privateArea
    }

    /// The DER encoding.
    package var der: [UInt8] {
        var body = TPMKeyFile.loadableKeyOID
        if emptyAuth { body += [0xA0, 0x03, 0x01, 0x01, 0xFF] }
        body += DER.element(0x02, DER.unsignedInteger(parent))
        body += DER.element(0x04, publicArea)
        body += DER.element(0x04, privateArea)
        return DER.element(0x30, body)
    }

    /// Parses the DER strictly: the loadable-key OID, definite minimal lengths, a parent
    /// that fits 32 bits, and nothing after the SEQUENCE.
    package init(der bytes: [UInt8]) throws(TPMParseError) {
        var outer = DER.Reader(bytes)
        var body = DER.Reader(try outer.element(0x30, "TPMKey"))
        try outer.end("TPMKey")
        guard try body.raw(TPMKeyFile.loadableKeyOID.count, "type") == TPMKeyFile.loadableKeyOID else {
            throw TPMParseError("type: not a loadable TPM key")
        }
        emptyAuth = false
        if body.peek == 0xA0 {
            var tagged = DER.Reader(try body.element(0xA0, "emptyAuth"))
            let flag = try tagged.element(0x01, "emptyAuth")
            try tagged.end("emptyAuth")
            guard flag.count == 1, flag[0] == 0 || flag[0] == 0xFF else {
                throw TPMParseError("emptyAuth: not a DER BOOLEAN")
            }
            emptyAuth = flag[0] == 0xFF
        }
        parent = try DER.unsignedInteger(try body.element(0x02, "parent"))
        publicArea = try body.element(0x04, "pubkey")
        privateArea = try body.element(0x04, "privkey")
        try body.end("TPMKey")
    }
}

/// The few DER rules the key file needs.
enum DER {
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        if count <= 0xFF { return [0x81, UInt8(count)] }
        return [0x82, UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
    }

    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }

    /// A non-negative INTEGER's minimal content bytes.
    static func unsignedInteger(_ value: UInt32) -> [UInt8] {
        var bytes = [
            UInt8((value >> 24) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF),
        ]
        while bytes.count > 1 && bytes[0] == 0 && bytes[1] & 0x80 == 0 { bytes.removeFirst() }
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return bytes
    }

    static func unsignedInteger(_ content: [UInt8]) throws(TPMParseError) -> UInt32 {
        guard let first = content.first, first & 0x80 == 0 else {
            throw TPMParseError("parent: not a non-negative INTEGER")
        }
        guard content.count == 1 || !(first == 0 && content[1] & 0x80 == 0) else {
            throw TPMParseError("parent: not minimal")
        }
        let digits = first == 0 ? Array(content.dropFirst()) : content
        guard digits.count <= 4 else { throw TPMParseError("parent: larger than 32 bits") }
        return digits.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    struct Reader {
        private let bytes: [UInt8]
        private var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var peek: UInt8? { offset < bytes.count ? bytes[offset] : nil }

        mutating func raw(_ count: Int, _ field: String) throws(TPMParseError) -> [UInt8] {
            guard count <= bytes.count - offset else { throw TPMParseError("\(field): ends early") }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }

        /// One element of `tag` with a definite, minimally encoded length (up to 64 KiB).
        mutating func element(_ tag: UInt8, _ field: String) throws(TPMParseError) -> [UInt8] {
            guard try raw(1, field)[0] == tag else { throw TPMParseError("\(field): unexpected tag") }
            let first = try raw(1, field)[0]
            var count = Int(first)
            switch first {
            case 0..<0x80: break
            case 0x81:
                count = Int(try raw(1, field)[0])
                guard count >= 0x80 else { throw TPMParseError("\(field): length not minimal") }
            case 0x82:
                let two = try raw(2, field)
                count = Int(two[0]) << 8 | Int(two[1])
                guard count > 0xFF else { throw TPMParseError("\(field): length not minimal") }
            default:
                throw TPMParseError("\(field): unsupported length")
            }
            return try raw(count, field)
        }

        func end(_ structure: String) throws(TPMParseError) {
            guard offset == bytes.count else {
                throw TPMParseError("\(structure): \(bytes.count - offset) bytes after its end")
            }
        }
    }
}

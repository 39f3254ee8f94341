/// An RSA public key as a JSON Web Key (RFC 7517), members base64url without padding.
package struct JWK: Equatable, Sendable {
    /// Modulus, big-endian, no leading zero bytes.
    package var n: [UInt8]
    /// Public exponent, big-endian, no leading zero bytes.
    package var e: [UInt8]

    package init(n: [UInt8], e: [UInt8]) {
        self.n = JWK.trimmed(n)
        self.e = JWK.trimmed(e)
    }

    /// Key size in bits.
    package var bits: Int {
        guard let first = n.first else { return 0 }
        return (n.count - 1) * 8 + (8 - first.leadingZeroBitCount)
    }

    /// `{"kty":"RSA","n":…,"e":…}`
    package var json: JSONValue {
        .object([("kty", .string("RSA")), ("n", .string(Base64URL.encode(n))), ("e", .string(Base64URL.encode(e)))])
    }

    /// The exact bytes RFC 7638 hashes for an RSA key: required members, sorted, no spaces.
    package var thumbprintInput: [UInt8] {
        Array("{\"e\":\"\(Base64URL.encode(e))\",\"kty\":\"RSA\",\"n\":\"\(Base64URL.encode(n))\"}".utf8)
    }

    /// Reads `{"kty":"RSA","n":…,"e":…}`; nil when it is not an RSA JWK.
    package init?(json: JSONValue) {
        guard json["kty"]?.stringValue == "RSA",
            let n = json["n"]?.stringValue.flatMap(Base64URL.decode),
            let e = json["e"]?.stringValue.flatMap(Base64URL.decode),
            !n.isEmpty, !e.isEmpty
        else { return nil }
        self.init(n: n, e: e)
    }

    private static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        Array(bytes.drop(while: { $0 == 0 }))
    }
}

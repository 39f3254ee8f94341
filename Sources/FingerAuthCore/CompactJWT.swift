/// Why a compact JWT was refused before its signature was even looked at.
package enum JWTFormatError: Error, Equatable, Sendable {
    case tooLarge
    case segmentCount
    case encoding(String)
    case json(String)
}

/// A JWS in compact serialization, split and decoded strictly: exactly three base64url
/// segments, header and claims JSON objects. Checking it is the verifier's job.
package struct CompactJWT: Sendable {
    package let header: JSONValue
    package let claims: JSONValue
    package let signature: [UInt8]
    /// `base64url(header) "." base64url(claims)`: the bytes the signature covers.
    package let signingInput: [UInt8]

    package static let maxBytes = 8 * 1024

    package init(parsing token: String, maxBytes: Int = CompactJWT.maxBytes) throws(JWTFormatError) {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxBytes else { throw .tooLarge }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .segmentCount }
        guard let headerBytes = Base64URL.decode(Array(parts[0])) else { throw .encoding("header") }
        guard let claimBytes = Base64URL.decode(Array(parts[1])) else { throw .encoding("payload") }
        guard let signature = Base64URL.decode(Array(parts[2])) else { throw .encoding("signature") }
        let parser = JSONParser(maxBytes: maxBytes, maxDepth: 8)
        guard let header = try? parser.parse(headerBytes), header.objectValue != nil else { throw .json("header") }
        guard let claims = try? parser.parse(claimBytes), claims.objectValue != nil else { throw .json("payload") }
        self.header = header
        self.claims = claims
        self.signature = signature
        self.signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
    }

    /// `base64url(json(header)) "." base64url(json(claims))`, ready to be signed.
    package static func signingInput(header: JSONValue, claims: JSONValue) -> [UInt8] {
        Array(
            (Base64URL.encode(JSONEncoding.encodeBytes(header)) + "."
                + Base64URL.encode(JSONEncoding.encodeBytes(claims))).utf8)
    }

    /// The finished token: signing input, ".", base64url(signature).
    package static func serialize(signingInput: [UInt8], signature: [UInt8]) -> String {
        String(decoding: signingInput, as: UTF8.self) + "." + Base64URL.encode(signature)
    }
}

/// The public half of an authenticator's offline-grant key: an ECDSA P-256 key as a JSON
/// Web Key (RFC 7517/7518), `x` and `y` 32 bytes each. Hosts pin these keys (the
/// `grant-keys` file under `state_dir`) and check each offline grant's ES256 signature with them.
package struct GrantKeyJWK: Equatable, Sendable {
    package var x: [UInt8]
    package var y: [UInt8]

    /// nil unless both coordinates are exactly 32 bytes.
    package init?(x: [UInt8], y: [UInt8]) {
        guard x.count == 32, y.count == 32 else { return nil }
        self.x = x
        self.y = y
    }

    /// `{"kty":"EC","crv":"P-256","x":…,"y":…,"kid":…}`, with `kid` its RFC 7638 thumbprint when given.
    package func json(kid: String? = nil) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("kty", .string("EC")), ("crv", .string("P-256")),
            ("x", .string(Base64URL.encode(x))), ("y", .string(Base64URL.encode(y))),
        ]
        if let kid { fields.append(("kid", .string(kid))) }
        return .object(fields)
    }

    /// The exact bytes RFC 7638 hashes for an EC key: required members, sorted, no spaces.
    package var thumbprintInput: [UInt8] {
        Array(
            "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(Base64URL.encode(x))\",\"y\":\"\(Base64URL.encode(y))\"}".utf8)
    }

    /// Reads an EC P-256 JWK; nil for anything else.
    package init?(json: JSONValue) {
        guard json["kty"]?.stringValue == "EC", json["crv"]?.stringValue == "P-256",
            let x = json["x"]?.stringValue.flatMap(Base64URL.decode),
            let y = json["y"]?.stringValue.flatMap(Base64URL.decode)
        else { return nil }
        self.init(x: x, y: y)
    }
}

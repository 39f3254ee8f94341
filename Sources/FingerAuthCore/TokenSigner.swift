/// Signs with the user's device key (in the helper and the command line, never the module).
package protocol TokenSigner {
    /// RFC 7638 thumbprint of the public key.
    var kid: String { get }
    /// RS256 signature of `input`; nil when signing failed.
    func signRS256(_ input: [UInt8]) -> [UInt8]?
}

/// Why a device key could not be loaded (its file, its TPM handle).
package struct KeyLoadError: Error, Equatable, Sendable {
    package var message: String
    package init(_ message: String) { self.message = message }
}

import COpenSSL

/// A libcrypto failure, with OpenSSL's own reason text (never key material).
package struct CryptoError: Error, CustomStringConvertible, Sendable {
    package let operation: String
    package let reason: String

    package var description: String { "\(operation): \(reason)" }

    /// Takes and clears OpenSSL's error queue for this thread.
    static func last(_ operation: String) -> CryptoError {
        var reason = "unknown error"
        let code = ERR_get_error()
        if code != 0, let text = ERR_reason_error_string(code) { reason = String(cString: text) }
        ERR_clear_error()
        return CryptoError(operation: operation, reason: reason)
    }
}

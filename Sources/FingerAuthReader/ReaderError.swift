import FingerAuthCore
import FingerAuthLoginDomain

/// Why the reader could not do what was asked: a `HelperFailure` for the wire protocol and a
/// sentence for people. Built from `GError`s in one place (`ReaderError.from(_:)`).
package struct ReaderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The protocol reason (`FAIL <reason> …`).
    package var failure: HelperFailure
    /// What happened, in plain words; never print data.
    package var message: String

    /// An error with its protocol reason and its sentence.
    package init(_ failure: HelperFailure, _ message: String) {
        self.failure = failure
        self.message = message
    }

    package var description: String { message }

    /// The `FAIL` message the login helper prints for this error.
    package var scanMessage: HelperMessage { .fail(failure, detail: message) }

    /// libfprint found no reader at all.
    package static let noReader = ReaderError(.noReader, "No fingerprint reader found")
    /// The deadline passed (the operation was cancelled by its GLib timeout).
    package static let timeout = ReaderError(.timeout, "No finger was read before the deadline")
}

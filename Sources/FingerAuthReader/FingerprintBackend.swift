import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// An open reader for one login, whoever runs it: libfprint in this process
/// (`LibfprintBackend`) or fprintd over the system bus (`FprintdBackend`). The login helper
/// asks for one verification per try and closes it before it reports a match; `close` is
/// also called on every other path (and by `deinit`).
package protocol FingerprintBackend: AnyObject {
    /// The reader's name, for `READY`.
    var readerName: String { get }
    /// Which service reads the finger (`libfprint`, `fprintd`).
    var kind: ReaderChoice { get }
    /// One try: a finger read and matched against the user's prints.
    func verify(deadline: Deadline, events: (HelperMessage) -> Void) throws(ReaderError) -> VerifyResult
    /// Closes the reader or releases fprintd's claim; more than once is harmless.
    func close()
}

/// libfprint in this process, with FingerAuth's own prints.
package final class LibfprintBackend: FingerprintBackend {
    package let reader: FingerprintReader
    let prints: [(finger: String, data: [UInt8])]

    package init(reader: FingerprintReader, prints: [(finger: String, data: [UInt8])]) {
        self.reader = reader
        self.prints = prints
    }

    package var readerName: String { reader.name }
    package var kind: ReaderChoice { .libfprint }

    package func verify(deadline: Deadline, events: (HelperMessage) -> Void) throws(ReaderError) -> VerifyResult {
        try reader.verify(prints: prints, deadline: deadline, events: events)
    }

    package func close() { reader.close() }
}

/// fprintd's default reader, claimed for the user; fprintd holds the prints.
package final class FprintdBackend: FingerprintBackend {
    let device: FprintdDevice

    package init(device: FprintdDevice) {
        self.device = device
    }

    deinit { device.release() }

    package var readerName: String { device.name + " (fprintd)" }
    package var kind: ReaderChoice { .fprintd }

    package func verify(deadline: Deadline, events: (HelperMessage) -> Void) throws(ReaderError) -> VerifyResult {
        try device.verify(deadline: deadline, events: events)
    }

    package func close() { device.release() }
}

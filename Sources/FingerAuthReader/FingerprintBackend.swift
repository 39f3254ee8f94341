import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// An open reader for one login, whoever runs it: libfprint in this process
/// (`LibfprintBackend`) or fprintd over the system bus (`FprintdBackend`). The login helper
/// asks for one verification per try and closes it before it reports a match; `close` is
/// also called on every other path (and by `deinit`).
public protocol FingerprintBackend: AnyObject {
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
public final class LibfprintBackend: FingerprintBackend {
    public let reader: FingerprintReader
    let prints: [(finger: String, data: [UInt8])]

    public init(reader: FingerprintReader, prints: [(finger: String, data: [UInt8])]) {
        self.reader = reader
        self.prints = prints
    }

    public var readerName: String { reader.name }
    public var kind: ReaderChoice { .libfprint }

    public func verify(deadline: Deadline, events: (HelperMessage) -> Void) throws(ReaderError) -> VerifyResult {
        try reader.verify(prints: prints, deadline: deadline, events: events)
    }

    public func close() { reader.close() }
}

/// fprintd's default reader, claimed for the user; fprintd holds the prints.
public final class FprintdBackend: FingerprintBackend {
    let device: FprintdDevice

    public init(device: FprintdDevice) {
        self.device = device
    }

    deinit { device.release() }

    public var readerName: String { device.name + " (fprintd)" }
    public var kind: ReaderChoice { .fprintd }

    public func verify(deadline: Deadline, events: (HelperMessage) -> Void) throws(ReaderError) -> VerifyResult {
        try device.verify(deadline: deadline, events: events)
    }

    public func close() { device.release() }
}

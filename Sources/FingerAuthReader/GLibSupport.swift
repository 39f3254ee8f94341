import CFPrint
import FingerAuthCore
import FingerAuthSystem

/// A `GCancellable` that a GLib timeout source (`g_timeout_add`, millisecond precision, on
/// the default main context that libfprint's `*_sync` calls iterate) cancels at a deadline.
/// The source is removed when the wait ends first, so it never outlives this object.
final class CancelTimer {
    let cancellable: UnsafeMutablePointer<GCancellable>
    private(set) var fired = false
    private var sourceID: guint = 0

    /// Nil when the deadline has already passed or GLib could not make a cancellable.
    init?(deadline: Deadline) {
        let ms = deadline.remainingMilliseconds
        guard ms > 0, let c = g_cancellable_new() else { return nil }
        cancellable = c
        let interval = guint(clamping: ms)
        sourceID = g_timeout_add(
            interval,
            { data in
                guard let data else { return gboolean(0) }
                let timer = Unmanaged<CancelTimer>.fromOpaque(data).takeUnretainedValue()
                timer.fired = true
                timer.sourceID = 0
                g_cancellable_cancel(timer.cancellable)
                return gboolean(0) // G_SOURCE_REMOVE
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        if sourceID != 0 { g_source_remove(sourceID) }
        g_object_unref(UnsafeMutableRawPointer(cancellable))
    }
}

/// Runs `body` with a cancellable that fires at `deadline`; an already passed deadline
/// is a timeout without calling `body`.
package func withDeadline<T>(
    _ deadline: Deadline,
    _ body: (UnsafeMutablePointer<GCancellable>) throws(ReaderError) -> T
) throws(ReaderError) -> T {
    guard let timer = CancelTimer(deadline: deadline) else { throw ReaderError.timeout }
    return try withExtendedLifetime(timer) { () throws(ReaderError) -> T in try body(timer.cancellable) }
}

/// A reader hint from an `FP_DEVICE_RETRY` error, in plain words.
package func retryHint(code: Int32) -> String {
    switch UInt32(bitPattern: code) {
    case FP_DEVICE_RETRY_TOO_SHORT.rawValue: return "Swipe was too short, try again"
    case FP_DEVICE_RETRY_CENTER_FINGER.rawValue: return "Center your finger on the reader"
    case FP_DEVICE_RETRY_REMOVE_FINGER.rawValue: return "Remove your finger and try again"
    default: return "The finger was not read well, try again"
    }
}

/// A `GError` taken out of a C call: either a retry request or a final `ReaderError`.
package enum GLibOutcome {
    case retry(hint: String)
    case failed(ReaderError)
}

extension ReaderError {
    /// Turns (and frees) a `GError`. `context` starts the message ("Verify failed").
    package static func take(_ error: UnsafeMutablePointer<GError>?, context: String) -> GLibOutcome {
        guard let error else { return .failed(ReaderError(.deviceError, context + ": unknown error")) }
        defer { g_error_free(error) }
        let domain = error.pointee.domain
        let code = error.pointee.code
        let text = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
        if domain == fp_device_retry_quark() { return .retry(hint: retryHint(code: code)) }
        if domain == g_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue) {
            return .failed(.timeout)
        }
        guard domain == fp_device_error_quark() else {
            return .failed(ReaderError(.deviceError, context + ": " + text))
        }
        switch UInt32(bitPattern: code) {
        case FP_DEVICE_ERROR_BUSY.rawValue:
            return .failed(ReaderError(.busy, "The reader is busy (another program is using it)"))
        case FP_DEVICE_ERROR_REMOVED.rawValue:
            return .failed(ReaderError(.removed, "reader removed during the scan"))
        case FP_DEVICE_ERROR_DATA_INVALID.rawValue, FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue:
            return .failed(ReaderError(.badPrint, "The enrolled print does not fit this reader: " + text))
        case FP_DEVICE_ERROR_DATA_DUPLICATE.rawValue:
            return .failed(
                ReaderError(
                    .deviceError,
                    "This finger is already enrolled on the reader: the sensor holds it, for another user or another system (libfprint: data duplicate); enroll another finger, or delete that print where it was enrolled (fingerauth remove, fprintd-delete)"
                ))
        case FP_DEVICE_ERROR_TOO_HOT.rawValue:
            return .failed(ReaderError(.deviceError, "The reader is too hot, try again later"))
        default:
            return .failed(ReaderError(.deviceError, context + ": " + text))
        }
    }

    /// Like `take`, for calls where a retry request is not expected: it becomes a device error.
    package static func final(_ error: UnsafeMutablePointer<GError>?, context: String) -> ReaderError {
        switch take(error, context: context) {
        case let .failed(e): return e
        case let .retry(hint): return ReaderError(.deviceError, context + ": " + hint)
        }
    }
}

/// One deserialized `FpPrint`, owned (unreferenced in deinit).
final class OwnedPrint {
    let pointer: OpaquePointer
    let finger: String

    /// `fp_print_deserialize`; a corrupt print is `.badPrint`.
    init(finger: String, data: [UInt8]) throws(ReaderError) {
        // fp_print_deserialize aborts the process on 3 bytes or fewer (not an error): check first.
        guard data.count > 3, Array(data.prefix(3)) == Array("FP3".utf8) else {
            throw ReaderError(.badPrint, "The print for \(finger) is not a libfprint print")
        }
        var error: UnsafeMutablePointer<GError>? = nil
        let print = data.withUnsafeBufferPointer { fp_print_deserialize($0.baseAddress, gsize($0.count), &error) }
        guard let print else {
            let reason = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "unreadable"
            if let error { g_error_free(error) }
            throw ReaderError(.badPrint, "The print for \(finger) is corrupt: \(reason)")
        }
        if let error { g_error_free(error) }
        // fp_print_deserialize returns a full (already sunk) reference: ours to unref.
        pointer = print
        self.finger = finger
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(pointer)) }
}

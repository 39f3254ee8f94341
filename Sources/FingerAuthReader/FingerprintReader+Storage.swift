import CFPrint
import FingerAuthCore
import FingerAuthSystem

/// Match-on-chip readers (Goodix, Synaptics, Elan MoC; libfprint's `virtual_device_storage`):
/// the template lives on the sensor. Enrollment stores it there (libfprint does, for a
/// reader with `FP_DEVICE_FEATURE_STORAGE`) and FingerAuth keeps the reference print it
/// returns; a verify or identify is believed only for a print that is one of this user's
/// by identity (`fp_print_equal`: the sensor's id of the template), never for "a match";
/// `remove` and `reset` delete the sensor's copy.
extension FingerprintReader {
    /// True when the reader stores prints on the sensor.
    package var hasStorage: Bool {
        fp_device_has_feature(device, FP_DEVICE_FEATURE_STORAGE) != 0
    }

    /// After a verify said "match" on a match-on-chip reader: nil when the print the sensor
    /// matched is `expected` itself, else the attempt to return instead — no match for
    /// another print (a driver that reports any known finger as a match), a failure when the
    /// sensor does not say which print it matched.
    func matchOnChipIdentity(_ scanned: OpaquePointer?, expected: OwnedPrint) -> Attempt<Bool>? {
        guard hasStorage else { return nil }
        guard let scanned else {
            return .failed(
                ReaderError(.deviceError, "the reader reported a match without naming the print; not believed"))
        }
        return fp_print_equal(scanned, expected.pointer) != 0 ? nil : .decided(false)
    }

    /// True (and the error freed) when a match-on-chip sensor says it holds no print for
    /// the finger it read (`FP_DEVICE_ERROR_DATA_NOT_FOUND` during a verify or identify): a
    /// finger it does not know, which is a no-match, not a broken print.
    func chipDoesNotKnow(_ error: UnsafeMutablePointer<GError>?) -> Bool {
        guard hasStorage, let error, error.pointee.domain == fp_device_error_quark(),
            UInt32(bitPattern: error.pointee.code) == FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue
        else { return false }
        g_error_free(error)
        return true
    }

    /// Deletes a print from the sensor (`fp_device_delete_print_sync`). `.stored` when the
    /// sensor held it, `.notStored` when the print is not a sensor print or the sensor no
    /// longer holds it.
    package func deleteFromSensor(_ data: [UInt8], finger: String, deadline: Deadline) throws(ReaderError)
        -> SensorDeletion
    {
        let print = try OwnedPrint(finger: finger, data: data)
        guard hasStorage, fp_print_get_device_stored(print.pointer) != 0 else { return .notStored }
        guard fp_print_compatible(print.pointer, device) != 0 else {
            throw ReaderError(.badPrint, "The print for \(finger) was made with another reader")
        }
        return try withDeadline(deadline) { (cancellable) throws(ReaderError) -> SensorDeletion in
            var error: UnsafeMutablePointer<GError>? = nil
            if fp_device_delete_print_sync(device, print.pointer, cancellable, &error) != 0 {
                if let error { g_error_free(error) }
                return .stored
            }
            if let error, error.pointee.domain == fp_device_error_quark(),
                UInt32(bitPattern: error.pointee.code) == FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue
            {
                g_error_free(error)
                return .notStored
            }
            throw ReaderError.final(error, context: "Deleting the print from the reader failed")
        }
    }

    /// Whether a serialized print lives on a sensor (a match-on-chip reference print).
    package static func isSensorPrint(_ data: [UInt8]) -> Bool {
        guard let print = try? OwnedPrint(finger: "-", data: data) else { return false }
        return fp_print_get_device_stored(print.pointer) != 0
    }
}

/// What `deleteFromSensor` found.
package enum SensorDeletion: Equatable, Sendable {
    /// The sensor held the print and deleted it.
    case stored
    /// Nothing to delete on the sensor.
    case notStored
}

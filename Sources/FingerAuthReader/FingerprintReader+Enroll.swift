import CFPrint
import FingerAuthCore
import FingerAuthSystem

extension FingerprintReader {
    /// Enrolls `finger` (`fp_device_enroll_sync`) and returns the serialized print
    /// (`fp_print_serialize`), with its finger and `username` set. `progress` hears each
    /// completed stage and each retry hint as they happen. Errors: `.timeout` at `deadline`,
    /// `.busy`, `.removed`, `.deviceError` (also for a finger already on a storage reader).
    package func enroll(
        finger: Finger, username: String?, deadline: Deadline,
        progress: (EnrollProgress) -> Void
    ) throws(ReaderError) -> [UInt8] {
        guard let template = fp_print_new(device) else {
            throw ReaderError(.deviceError, "libfprint could not make a print")
        }
        g_object_ref_sink(UnsafeMutableRawPointer(template))
        defer { g_object_unref(UnsafeMutableRawPointer(template)) }
        fp_print_set_finger(template, finger.fpFinger)
        if let username { fp_print_set_username(template, username) }
        let total = enrollStages

        let enrolled = try withoutActuallyEscaping(progress) { (report) throws(ReaderError) -> OpaquePointer in
            let box = EnrollBox(total: total, report: report)
            return try withExtendedLifetime(box) { () throws(ReaderError) -> OpaquePointer in
                try withDeadline(deadline) { (cancellable) throws(ReaderError) -> OpaquePointer in
                    var error: UnsafeMutablePointer<GError>? = nil
                    let print = fp_device_enroll_sync(
                        device, template, cancellable,
                        { device, completed, _, data, error in
                            guard let data else { return }
                            let box = Unmanaged<EnrollBox>.fromOpaque(data).takeUnretainedValue()
                            if let error {
                                // Progress errors are always FP_DEVICE_RETRY; libfprint frees them.
                                box.report(.retry(hint: retryHint(code: error.pointee.code)))
                            } else {
                                // Read the total now: a driver may change it once enrollment runs
                                // (the virtual device's SET_ENROLL_STAGES does).
                                let total = device.map { Int(fp_device_get_nr_enroll_stages($0)) } ?? box.total
                                box.report(.stage(completed: Int(completed), total: total))
                            }
                        }, Unmanaged.passUnretained(box).toOpaque(), &error)
                    guard let print else { throw ReaderError.final(error, context: "Enrollment failed") }
                    if let error { g_error_free(error) }
                    return print
                }
            }
        }
        defer { g_object_unref(UnsafeMutableRawPointer(enrolled)) }
        // The driver fills the template; set the labels again in case it made a new print.
        fp_print_set_finger(enrolled, finger.fpFinger)
        if let username { fp_print_set_username(enrolled, username) }
        return try serialize(enrolled)
    }

    /// `enroll(finger:username:deadline:progress:)` with a deadline `seconds` from now.
    package func enroll(
        finger: Finger, username: String?, timeout seconds: Double,
        progress: (EnrollProgress) -> Void
    ) throws(ReaderError) -> [UInt8] {
        try enroll(finger: finger, username: username, deadline: .after(seconds: seconds), progress: progress)
    }

    private func serialize(_ print: OpaquePointer) throws(ReaderError) -> [UInt8] {
        var data: UnsafeMutablePointer<guchar>? = nil
        var length: gsize = 0
        var error: UnsafeMutablePointer<GError>? = nil
        guard fp_print_serialize(print, &data, &length, &error) != 0, let data else {
            throw ReaderError.final(error, context: "Cannot store the print")
        }
        defer { g_free(data) }
        if let error { g_error_free(error) }
        return Array(UnsafeBufferPointer(start: data, count: Int(clamping: length)))
    }
}

/// What the C progress callback reaches through its user data.
private final class EnrollBox {
    let total: Int
    let report: (EnrollProgress) -> Void
    init(total: Int, report: @escaping (EnrollProgress) -> Void) {
        self.total = total
        self.report = report
    }
}

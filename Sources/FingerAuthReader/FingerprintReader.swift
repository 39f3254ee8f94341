import CFPrint
import FingerAuthCore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// One open fingerprint reader: owns the `FpContext` and the `FpDevice` (closed and
/// unreferenced in deinit). Every libfprint wait runs under a `Deadline`, enforced by a
/// `GCancellable` that a GLib timeout cancels (the virtual device would otherwise wait
/// forever). Not thread-safe: use it from one thread, the one that opened it.
package final class FingerprintReader {
    let context: UnsafeMutablePointer<FpContext>
    let device: UnsafeMutablePointer<FpDevice>

    /// The reader's human name (`fp_device_get_name`), e.g. "Virtual device for debugging".
    package let name: String
    /// The libfprint driver id (`fp_device_get_driver`), e.g. "virtual_device".
    package let driver: String

    /// Environment variables that make libfprint open test devices or replay USB
    /// recordings. `open` clears them all so that only its argument can pick a virtual reader.
    package static let virtualDeviceVariables = [
        "FP_VIRTUAL_DEVICE", "FP_VIRTUAL_DEVICE_STORAGE", "FP_VIRTUAL_IMAGE",
        "FP_DEVICE_EMULATION", "FP_DRIVERS_WHITELIST", "FP_DRIVERS_ALLOWLIST",
    ]

    private init(context: UnsafeMutablePointer<FpContext>, device: UnsafeMutablePointer<FpDevice>) {
        self.context = context
        self.device = device
        name = fp_device_get_name(device).map { String(cString: $0) } ?? "fingerprint reader"
        driver = fp_device_get_driver(device).map { String(cString: $0) } ?? "unknown"
    }

    /// Opens the first reader libfprint finds (`fp_context_new`, `fp_context_get_devices`,
    /// `fp_device_open_sync`).
    ///
    /// - Parameter virtualReader: a socket path for libfprint's `virtual_device` test driver,
    ///   set as `FP_VIRTUAL_DEVICE` before the context is made. The caller must take it from
    ///   root-owned configuration only: whoever writes to that socket chooses the finger.
    ///   The `virtualDeviceVariables` are removed from the environment first, always.
    /// - Parameter virtualStorageReader: the same for `virtual_device_storage` (a
    ///   match-on-chip reader), set as `FP_VIRTUAL_DEVICE_STORAGE`.
    /// - Parameter placement: which reader may be taken (`ReaderPlacementRule`: any, or only
    ///   one on an external port while the lid is closed).
    /// - Parameter deadline: how long opening may take.
    package static func open(
        virtualReader: String?, virtualStorageReader: String? = nil,
        placement: ReaderPlacementRule = .any,
        deadline: Deadline = .after(seconds: 10)
    ) throws(ReaderError) -> FingerprintReader {
        for variable in virtualDeviceVariables { unsetenv(variable) }
        for (variable, path) in [
            ("FP_VIRTUAL_DEVICE", virtualReader), ("FP_VIRTUAL_DEVICE_STORAGE", virtualStorageReader),
        ] {
            guard let path else { continue }
            guard !path.isEmpty, setenv(variable, path, 1) == 0 else {
                throw ReaderError(.noReader, "The virtual reader path is not usable")
            }
        }
        guard let context = fp_context_new() else {
            throw ReaderError(.deviceError, "libfprint could not start")
        }
        guard let devices = fp_context_get_devices(context), devices.pointee.len > 0 else {
            g_object_unref(UnsafeMutableRawPointer(context))
            throw ReaderError.noReader
        }
        let device: UnsafeMutablePointer<FpDevice>
        do {
            device = try placement.choose(devices)
        } catch {
            g_object_unref(UnsafeMutableRawPointer(context))
            throw error
        }
        g_object_ref(UnsafeMutableRawPointer(device))
        // From here the reader owns both references; its deinit releases them.
        let reader = FingerprintReader(context: context, device: device)
        try withDeadline(deadline) { (cancellable) throws(ReaderError) in
            var error: UnsafeMutablePointer<GError>? = nil
            guard fp_device_open_sync(device, cancellable, &error) != 0 else {
                let failure = ReaderError.final(error, context: "Cannot open \(reader.name)")
                switch failure.failure {
                case .busy, .removed, .timeout: throw failure
                default: throw ReaderError(.noReader, failure.message)
                }
            }
        }
        return reader
    }

    /// Closes the reader (`fp_device_close_sync`) if it is open, waiting at most until
    /// `deadline`: the virtual device closes at once, a real one gets two seconds. The login
    /// closes it before reporting a match, so that a slow close cannot turn a good finger
    /// into a failure.
    package func close(deadline: Deadline = .after(seconds: 2)) {
        guard fp_device_is_open(device) != 0 else { return }
        try? withDeadline(deadline) { (cancellable) throws(ReaderError) in
            var error: UnsafeMutablePointer<GError>? = nil
            if fp_device_close_sync(device, cancellable, &error) == 0, let error { g_error_free(error) }
        }
    }

    deinit {
        close()
        g_object_unref(UnsafeMutableRawPointer(device))
        g_object_unref(UnsafeMutableRawPointer(context))
    }

    /// Number of scans an enrollment needs (`fp_device_get_nr_enroll_stages`).
    package var enrollStages: Int { Int(fp_device_get_nr_enroll_stages(device)) }

    /// True when the reader can match one finger against several prints at once.
    package var supportsIdentify: Bool {
        fp_device_has_feature(device, FP_DEVICE_FEATURE_IDENTIFY) != 0
    }

    /// Checks that `data` is a print libfprint can read (`fp_print_deserialize`), without
    /// a reader. Corrupt data is `.badPrint`.
    package static func checkPrint(finger: String, data: [UInt8]) throws(ReaderError) {
        _ = try OwnedPrint(finger: finger, data: data)
    }
}

import CFPrint

extension FingerprintReader {
    /// The libfprint driver that made a saved print (`fp_print_get_driver`: "virtual_device"
    /// for the virtual reader of `fingerauth trial`); nil when the print cannot be read.
    package static func driver(ofPrint data: [UInt8], finger: String) -> String? {
        guard let print = try? OwnedPrint(finger: finger, data: data), let driver = fp_print_get_driver(print.pointer)
        else {
            return nil
        }
        return String(cString: driver)
    }

    /// The driver id of libfprint's virtual reader (`virtual_reader`).
    package static let virtualDriver = "virtual_device"
}

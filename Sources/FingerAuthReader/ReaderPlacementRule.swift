import CFPrint
import FingerAuthCore
import FingerAuthLoginDomain

#if canImport(Glibc)
import Glibc
#endif

/// Which of libfprint's readers may be opened: any (the first), or — with the lid closed
/// and `lid = skip` — only one on an external port. A reader's place comes from its USB
/// port (`ReaderPlacement`): libfprint's `fpi-usb-device` property gives GUsb's device, whose
/// `platform-id` names the port (`usb:01:00:03` → `/sys/bus/usb/devices/1-3/removable`). A
/// reader that is not on USB (SPI, the virtual test readers) counts as built in, unless
/// `virtualRemovable` says the virtual reader stands for an external one.
package struct ReaderPlacementRule: Equatable, Sendable {
    package var externalOnly: Bool
    package var virtualRemovable: Bool
    /// Why only external readers may be used (for the message), e.g. "lid closed (logind)".
    package var reason: String

    package init(externalOnly: Bool, virtualRemovable: Bool = false, reason: String = "") {
        self.externalOnly = externalOnly
        self.virtualRemovable = virtualRemovable
        self.reason = reason
    }

    package static let any = ReaderPlacementRule(externalOnly: false)

    static let usbDevices = "/sys/bus/usb/devices"

    /// The first reader the rule allows; `.lidClosed` when it allows none.
    func choose(_ devices: UnsafeMutablePointer<GPtrArray>) throws(ReaderError) -> UnsafeMutablePointer<FpDevice> {
        var names: [String] = []
        for index in 0..<Int(devices.pointee.len) {
            guard let raw = devices.pointee.pdata?[index] else { continue }
            let device = raw.assumingMemoryBound(to: FpDevice.self)
            if !externalOnly || placement(of: device) == .external { return device }
            names.append(fp_device_get_name(device).map { String(cString: $0) } ?? "reader")
        }
        throw ReaderError(
            .lidClosed, "\(reason); no reader on an external port (built in: \(names.joined(separator: ", ")))")
    }

    /// Where `device` sits.
    func placement(of device: UnsafeMutablePointer<FpDevice>) -> ReaderPlacement {
        let driver = fp_device_get_driver(device).map { String(cString: $0) } ?? ""
        if driver.hasPrefix("virtual_") { return virtualRemovable ? .external : .builtIn }
        guard let platformID = ReaderPlacementRule.usbPlatformID(device),
            let name = ReaderPlacement.sysfsName(platformID: platformID)
        else { return .builtIn }
        return ReaderPlacement(
            removable: LidSensor.readSmall(ReaderPlacementRule.usbDevices + "/" + name + "/removable"))
    }

    /// GUsb's platform id of the reader's USB device, read through GObject properties (no
    /// link to GUsb: its properties are looked up first, so an older libfprint without them
    /// gives nil, never a warning).
    static func usbPlatformID(_ device: UnsafeMutablePointer<FpDevice>) -> String? {
        guard let usb = objectProperty(UnsafeMutableRawPointer(device), "fpi-usb-device") else { return nil }
        defer { g_object_unref(usb) }
        return stringProperty(usb, "platform-id")
    }

    private static let gTypeObject = GType(20 << 2) // G_TYPE_OBJECT
    private static let gTypeString = GType(16 << 2) // G_TYPE_STRING

    private static func hasProperty(_ object: UnsafeMutableRawPointer, _ name: String, type: GType) -> Bool {
        let instance = object.assumingMemoryBound(to: GTypeInstance.self)
        guard let klass = instance.pointee.g_class,
            let spec = g_object_class_find_property(
                UnsafeMutableRawPointer(klass).assumingMemoryBound(to: GObjectClass.self), name)
        else { return false }
        return g_type_is_a(spec.pointee.value_type, type) != 0
            && spec.pointee.flags.rawValue & G_PARAM_READABLE.rawValue != 0
    }

    private static func objectProperty(_ object: UnsafeMutableRawPointer, _ name: String) -> UnsafeMutableRawPointer? {
        guard hasProperty(object, name, type: gTypeObject) else { return nil }
        var value = GValue()
        g_value_init(&value, gTypeObject)
        defer { g_value_unset(&value) }
        g_object_get_property(object.assumingMemoryBound(to: GObject.self), name, &value)
        return g_value_dup_object(&value)
    }

    private static func stringProperty(_ object: UnsafeMutableRawPointer, _ name: String) -> String? {
        guard hasProperty(object, name, type: gTypeString) else { return nil }
        var value = GValue()
        g_value_init(&value, gTypeString)
        defer { g_value_unset(&value) }
        g_object_get_property(object.assumingMemoryBound(to: GObject.self), name, &value)
        return g_value_get_string(&value).map { String(cString: $0) }
    }
}

import FingerAuthCore
import FingerAuthReader
import FingerAuthSystem

/// `remove` and `reset` on a match-on-chip reader: the template lives on the sensor, and a
/// copy left there would make the sensor refuse that finger for anyone's next enrollment
/// ("already enrolled on the reader"). So before the print files go, each print that is a
/// sensor print is deleted from the sensor (`fp_device_delete_print_sync`). The local files
/// go either way; what could not be deleted on the sensor is a warning that says so.
enum SensorPrints {
    static let rule = FileRule(owner: 0, forbiddenBits: 0o077, maxBytes: 16 * 1024)

    static func delete(_ context: Context, fingers: [String]) {
        var onSensor: [(finger: String, data: [UInt8])] = []
        for finger in fingers {
            guard let data = try? SafeFile.read(context.paths.printFile(finger: finger), rule: rule),
                FingerprintReader.isSensorPrint(data)
            else { continue }
            onSensor.append((finger, data))
        }
        guard !onSensor.isEmpty else { return }
        let reader: FingerprintReader
        do {
            reader = try FingerprintReader.open(
                virtualReader: context.options.virtualReader,
                virtualStorageReader: context.options.virtualStorageReader,
                deadline: .after(seconds: 5))
        } catch {
            for print in onSensor { leftOnSensor(print.finger, context.user, why: error.message) }
            return
        }
        for print in onSensor {
            do {
                switch try reader.deleteFromSensor(print.data, finger: print.finger, deadline: .after(seconds: 10)) {
                case .stored: say("deleted \(print.finger) of \(context.user) from the sensor (\(reader.name))")
                case .notStored: say("the sensor (\(reader.name)) no longer held \(print.finger) of \(context.user)")
                }
            } catch {
                leftOnSensor(print.finger, context.user, why: error.message)
            }
        }
        reader.close()
    }

    private static func leftOnSensor(_ finger: String, _ user: String, why: String) {
        printError(
            "fingerauth: warning: \(finger) of \(user) may still be stored on the sensor (\(why)); "
                + "the sensor refuses that finger for a new enrollment until it is deleted there")
    }
}

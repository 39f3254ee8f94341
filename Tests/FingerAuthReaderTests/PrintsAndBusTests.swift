import CFPrint
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// What the reader target can tell without a reader: prints that are no prints, fingers'
/// names, the enrollment's lines, D-Bus values and the bus's refusals.
final class PrintsAndBusTests: XCTestCase {
    func badPrint(_ data: [UInt8], finger: String = "right-index-finger") -> ReaderError? {
        do {
            try FingerprintReader.checkPrint(finger: finger, data: data)
            return nil
        } catch {
            return error
        }
    }

    func testDataThatIsNoLibfprintPrintIsABadPrintNamingTheFinger() {
        let expected = ReaderError(.badPrint, "The print for right-index-finger is not a libfprint print")
        XCTAssertEqual(badPrint([]), expected)
        XCTAssertEqual(badPrint(Array("FP3".utf8)), expected, "three bytes would abort libfprint")
        XCTAssertEqual(badPrint(Array("PNG\u{0}data".utf8)), expected)
    }

    func testACorruptPrintIsABadPrintWithLibfprintsReason() throws {
        let error = try XCTUnwrap(badPrint(Array("FP3".utf8) + [UInt8](repeating: 0x41, count: 32)))
        XCTAssertEqual(error.failure, .badPrint)
        XCTAssertTrue(error.message.hasPrefix("The print for right-index-finger is corrupt: "), error.message)
    }

    func testACorruptPrintIsNeitherOnASensorNorOfADriver() {
        let junk = Array("FP3".utf8) + [1, 2, 3, 4]
        XCTAssertFalse(FingerprintReader.isSensorPrint(junk))
        XCTAssertNil(FingerprintReader.driver(ofPrint: junk, finger: "left-thumb"))
    }

    func testTenFingersNamedAsFprintdNamesThem() {
        XCTAssertEqual(Finger.allCases.count, 10)
        XCTAssertEqual(Finger(rawValue: "right-index-finger"), .rightIndex)
        XCTAssertEqual(Finger.leftLittle.rawValue, "left-little-finger")
        XCTAssertNil(Finger(rawValue: "right-index"))
        XCTAssertEqual(Set(Finger.allCases.map(\.fpFinger.rawValue)).count, 10, "each finger its own libfprint value")
        XCTAssertEqual(Finger.rightIndex.fpFinger, FP_FINGER_RIGHT_INDEX)
        XCTAssertEqual(Finger.leftThumb.fpFinger, FP_FINGER_LEFT_THUMB)
    }

    func testEnrollmentProgressLines() {
        XCTAssertEqual(EnrollProgress.stage(completed: 3, total: 5).line, "STAGE 3/5")
        XCTAssertEqual(
            EnrollProgress.retry(hint: "Center your finger on the reader").line,
            "RETRY Center your finger on the reader")
    }

    // MARK: - D-Bus values

    func value(_ variant: OpaquePointer?) throws -> BusValue {
        let owned = try XCTUnwrap(g_variant_ref_sink(variant))
        defer { g_variant_unref(owned) }
        return BusValue(owned)
    }

    func testBusValuesOfTheTypesFprintdAndLogindUse() throws {
        XCTAssertEqual(try value(g_variant_new_string("hello")), .string("hello"))
        XCTAssertEqual(
            try value(g_variant_new_object_path("/net/reactivated/Fprint/Device/0")),
            .objectPath("/net/reactivated/Fprint/Device/0"))
        XCTAssertEqual(try value(g_variant_new_boolean(1)), .bool(true))
        XCTAssertEqual(try value(g_variant_new_uint32(1000)), .uint32(1000))
        XCTAssertEqual(try value(g_variant_new_int32(-5)), .int32(-5))
        XCTAssertEqual(try value(g_variant_new_variant(g_variant_new_boolean(0))), .variant(.bool(false)))
    }

    func testTuplesAndArraysAreTakenApartAndOtherTypesKeepTheirTypeString() throws {
        var children: [OpaquePointer?] = [g_variant_new_string("a"), g_variant_new_boolean(1)]
        let tuple = children.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, 2) }
        let parsed = try value(tuple)
        XCTAssertEqual(parsed, .tuple([.string("a"), .bool(true)]))
        XCTAssertEqual(parsed.fields, [.string("a"), .bool(true)])
        XCTAssertNil(parsed.strings)
        XCTAssertEqual(try value(g_variant_new_double(1.5)), .other(type: "d"))
        XCTAssertEqual(try value(g_variant_new_uint64(1)), .other(type: "t"))
    }

    func testAnArrayOfStringsIsReadAsStringsAndAMixedOneIsNot() throws {
        let strings = BusValue.array([.string("right-index-finger"), .string("left-thumb")])
        XCTAssertEqual(strings.strings, ["right-index-finger", "left-thumb"])
        XCTAssertNil(BusValue.array([.string("a"), .uint32(1)]).strings)
        XCTAssertEqual(BusValue.objectPath("/x").text, "/x")
        XCTAssertNil(BusValue.bool(true).text)
        XCTAssertNil(strings.fields)
    }

    func testAnArrayLongerThanTheLimitIsCutAtTheLimit() throws {
        var children: [OpaquePointer?] = (0..<(BusValue.maxChildren + 10)).map { g_variant_new_string("f\($0)") }
        let array = children.withUnsafeMutableBufferPointer {
            g_variant_new_array(nil, $0.baseAddress, gsize($0.count))
        }
        XCTAssertEqual(try value(array).strings?.count, BusValue.maxChildren)
    }

    // MARK: - the system bus

    func failure(_ path: String) -> String? {
        guard case let .failure(why) = SystemBus.connect(socketPath: path, deadline: .after(seconds: 1)) else {
            return nil
        }
        return why.message
    }

    func testABusPathThatIsNoSocketPathIsRefusedBeforeAnyConnection() {
        XCTAssertEqual(failure("run/dbus/socket"), "the system bus path run/dbus/socket is not a socket path")
        XCTAssertEqual(failure("/run/a,b"), "the system bus path /run/a,b is not a socket path")
        XCTAssertEqual(failure("/run/a;b"), "the system bus path /run/a;b is not a socket path")
    }

    func testAMissingBusSocketFailsAtOnce() {
        XCTAssertEqual(failure("/nonexistent/fa-bus-socket"), "no system bus at /nonexistent/fa-bus-socket")
    }

    func testARemoteDBusErrorKeepsItsNameAndLosesItFromTheText() throws {
        let error = g_dbus_error_new_for_dbus_error("net.reactivated.Fprint.Error.PermissionDenied", "Not Authorized")
        let failure = SystemBus.take(error, context: "Claim")
        XCTAssertEqual(failure.errorName, "net.reactivated.Fprint.Error.PermissionDenied")
        XCTAssertEqual(failure.message, "Claim: Not Authorized")
        XCTAssertEqual(SystemBus.take(nil, context: "Claim"), SystemBus.Failure("Claim: unknown error"))
    }
}

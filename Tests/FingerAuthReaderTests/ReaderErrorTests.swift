import CFPrint
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem
import XCTest

/// libfprint's and GLib's errors as the person and the module see them: the protocol reason
/// and the sentence.
final class ReaderErrorTests: XCTestCase {
    func gerror(_ domain: GQuark, _ code: UInt32, _ message: String = "driver said so") -> UnsafeMutablePointer<GError>?
    {
        g_error_new_literal(domain, gint(bitPattern: code), message)
    }

    func failed(_ outcome: GLibOutcome, file: StaticString = #filePath, line: UInt = #line) -> ReaderError? {
        guard case let .failed(error) = outcome else {
            XCTFail("not a final error: \(outcome)", file: file, line: line)
            return nil
        }
        return error
    }

    func testTheFixedErrorsSayWhatHappened() {
        XCTAssertEqual(ReaderError.noReader.failure, .noReader)
        XCTAssertEqual(ReaderError.noReader.description, "No fingerprint reader found")
        XCTAssertEqual(ReaderError.timeout.failure, .timeout)
        XCTAssertEqual(ReaderError.timeout.message, "No finger was read before the deadline")
    }

    func testTheScanMessageIsAFailLineWithTheReasonAndTheSentence() {
        let error = ReaderError(.busy, "The reader is busy")
        XCTAssertEqual(error.scanMessage, .fail(.busy, detail: "The reader is busy"))
        XCTAssertTrue(error.scanMessage.line.hasPrefix("FAIL busy"), error.scanMessage.line)
    }

    func testDeviceErrorsMapToTheirReasons() {
        let quark = fp_device_error_quark()
        let cases: [(UInt32, HelperFailure, String)] = [
            (FP_DEVICE_ERROR_BUSY.rawValue, .busy, "The reader is busy (another program is using it)"),
            (FP_DEVICE_ERROR_REMOVED.rawValue, .removed, "reader removed during the scan"),
            (
                FP_DEVICE_ERROR_DATA_INVALID.rawValue, .badPrint,
                "The enrolled print does not fit this reader: driver said so"
            ),
            (
                FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue, .badPrint,
                "The enrolled print does not fit this reader: driver said so"
            ),
            (FP_DEVICE_ERROR_TOO_HOT.rawValue, .deviceError, "The reader is too hot, try again later"),
            (FP_DEVICE_ERROR_PROTO.rawValue, .deviceError, "Verify failed: driver said so"),
        ]
        for (code, reason, text) in cases {
            let error = failed(ReaderError.take(gerror(quark, code), context: "Verify failed"))
            XCTAssertEqual(error, ReaderError(reason, text), text)
        }
    }

    func testADuplicateSaysWhereThePrintIsAndWhatToDo() throws {
        let error = try XCTUnwrap(
            failed(
                ReaderError.take(
                    gerror(fp_device_error_quark(), FP_DEVICE_ERROR_DATA_DUPLICATE.rawValue), context: "Enroll")))
        XCTAssertEqual(error.failure, .deviceError)
        XCTAssertTrue(error.message.hasPrefix("This finger is already enrolled on the reader"), error.message)
        XCTAssertTrue(error.message.contains("fingerauth remove"), error.message)
    }

    func testRetryErrorsBecomeHintsInPlainWords() {
        let quark = fp_device_retry_quark()
        let cases: [(UInt32, String)] = [
            (FP_DEVICE_RETRY_TOO_SHORT.rawValue, "Swipe was too short, try again"),
            (FP_DEVICE_RETRY_CENTER_FINGER.rawValue, "Center your finger on the reader"),
            (FP_DEVICE_RETRY_REMOVE_FINGER.rawValue, "Remove your finger and try again"),
            (FP_DEVICE_RETRY_GENERAL.rawValue, "The finger was not read well, try again"),
        ]
        for (code, hint) in cases {
            guard case let .retry(found) = ReaderError.take(gerror(quark, code), context: "Verify failed") else {
                XCTFail("not a retry: \(hint)")
                continue
            }
            XCTAssertEqual(found, hint)
        }
    }

    func testACancelledCallIsTheTimeout() {
        let error = failed(
            ReaderError.take(gerror(g_io_error_quark(), G_IO_ERROR_CANCELLED.rawValue), context: "Verify failed"))
        XCTAssertEqual(error, .timeout)
    }

    func testAnErrorOfAnotherDomainKeepsItsTextAfterTheContext() {
        let error = failed(
            ReaderError.take(gerror(g_io_error_quark(), G_IO_ERROR_FAILED.rawValue, "usb gone"), context: "Open"))
        XCTAssertEqual(error, ReaderError(.deviceError, "Open: usb gone"))
    }

    func testNoErrorAtAllIsAnUnknownDeviceError() {
        XCTAssertEqual(
            failed(ReaderError.take(nil, context: "Verify failed")),
            ReaderError(.deviceError, "Verify failed: unknown error"))
    }

    func testFinalTurnsARetryIntoADeviceErrorWithTheHint() {
        let error = ReaderError.final(
            gerror(fp_device_retry_quark(), FP_DEVICE_RETRY_TOO_SHORT.rawValue), context: "Deleting the print failed")
        XCTAssertEqual(error, ReaderError(.deviceError, "Deleting the print failed: Swipe was too short, try again"))
    }

    func testADeadlineAlreadyPassedIsATimeoutWithoutCallingTheBody() {
        var called = false
        XCTAssertThrowsError(
            try withDeadline(MonotonicInstant.now().adding(milliseconds: -10)) { (_) throws(ReaderError) -> Int in
                called = true
                return 1
            }
        ) { XCTAssertEqual($0 as? ReaderError, .timeout) }
        XCTAssertFalse(called)
    }

    func testADeadlineAheadRunsTheBodyWithACancellableNotYetCancelled() throws {
        let cancelled = try withDeadline(.after(seconds: 5)) { (c) throws(ReaderError) -> Bool in
            g_cancellable_is_cancelled(c) != 0
        }
        XCTAssertFalse(cancelled)
    }
}

import CTSS2
import FingerAuthTPM
import XCTest

/// TPM return codes sorted into the states an admin can act on, and the sentence each gets.
final class TPMErrorTests: XCTestCase {
    func testTCTIAndResourceManagerCodesMeanNoTPMAnswered() {
        XCTAssertEqual(TPMError.classify(0x000A_000A), .unreachable) // TSS2_TCTI_RC_IO_ERROR
        XCTAssertEqual(TPMError.classify(0x000A_0006), .unreachable)
        XCTAssertEqual(TPMError.classify(0x0008_0001), .unreachable) // resource manager TCTI
    }

    func testTheLockoutWarningIsLockout() {
        XCTAssertEqual(TPMError.classify(0x921), .lockout) // TPM_RC_LOCKOUT
    }

    func testIntegrityAndBindingFailuresMeanTheKeyIsNotThisTPMs() {
        XCTAssertEqual(TPMError.classify(0x09F), .foreignKey) // TPM_RC_INTEGRITY
        XCTAssertEqual(TPMError.classify(0x19F), .foreignKey) // on parameter 1
        XCTAssertEqual(TPMError.classify(0x0A5), .foreignKey) // TPM_RC_BINDING
        XCTAssertEqual(TPMError.classify(0x1A5), .foreignKey)
    }

    func testOtherCodesAreFailures() {
        XCTAssertEqual(TPMError.classify(0x101), .failed) // TPM_RC_FAILURE (format zero)
        XCTAssertEqual(TPMError.classify(0x98E), .failed) // TPM_RC_AUTH_FAIL on a session
        XCTAssertEqual(TPMError.classify(0x0007_0001), .failed, "an ESAPI-layer error is not the TPM's state")
        XCTAssertEqual(
            TPMError.classify(0x0006_0000 | 0x09F), .failed, "another layer's integrity is not a foreign key")
        XCTAssertEqual(TPMError.classify(0x01F), .failed, "number 0x1F without the format-one bit")
    }

    func testAnErrorFromACodeNamesTheOperationAndTheTSSText() {
        let error = TPMError("TPM2_Load", rc: 0x09F)
        XCTAssertEqual(error.kind, .foreignKey)
        XCTAssertTrue(error.description.hasPrefix("TPM2_Load: "), error.description)
        XCTAssertTrue(error.description.lowercased().contains("integrity"), error.description)
    }

    func testTheKindsAreNamedAsTheMessagesSpellThem() {
        XCTAssertEqual(TPMError.Kind.foreignKey.rawValue, "foreign-key")
        XCTAssertEqual(TPMError.Kind.badKeyFile.rawValue, "bad-key-file")
        XCTAssertEqual(TPMError.Kind.unreachable.rawValue, "unreachable")
        XCTAssertEqual(TPMError.Kind.lockout.rawValue, "lockout")
    }

    func testEachKindGetsAdviceAnAdminCanFollow() {
        XCTAssertTrue(TPMError(.unreachable, "").advice.contains("tpm_tcti"))
        XCTAssertTrue(TPMError(.lockout, "").advice.contains("tpm2_dictionarylockout --clear-lockout"))
        let rotate = "fingerauth key rotate --store tpm"
        XCTAssertTrue(TPMError(.foreignKey, "").advice.contains(rotate))
        XCTAssertEqual(TPMError(.foreignKey, "").advice, TPMError(.badKeyFile, "").advice)
        XCTAssertEqual(TPMError(.failed, "").advice, "see the TPM's error above")
    }

    func testAConnectionToATCTIOfAnotherKindIsRefusedBeforeTheTSSIsAsked() {
        XCTAssertThrowsError(try TPMConnection(tcti: "libtpms:/tmp/x")) { error in
            XCTAssertEqual(
                error as? TPMError,
                TPMError(.unreachable, "tpm_tcti 'libtpms:/tmp/x' is not a device:, swtpm: or mssim: TCTI"))
        }
    }

    func testAConnectionToAMissingDeviceIsUnreachable() {
        XCTAssertThrowsError(try TPMConnection(tcti: "device:/nonexistent/tpmrm9")) { error in
            let tpm = error as? TPMError
            XCTAssertEqual(tpm?.kind, .unreachable)
            XCTAssertEqual(tpm?.description.hasPrefix("connect to device:/nonexistent/tpmrm9: "), true, "\(error)")
        }
    }

    func testTheProbeSaysAMissingDeviceDoesNotExist() {
        XCTAssertEqual(
            TPMProbe.state(tcti: "device:/nonexistent/tpmrm9"), .unreachable("/nonexistent/tpmrm9 does not exist"))
        XCTAssertEqual(TPMProbe.inLockout, 1 << 9)
    }
}

import CTSS2
import FingerAuthCore
import FingerAuthLoginDomain

#if canImport(Glibc)
import Glibc
#endif

/// An ESAPI context on one TPM, named by a TCTI string from root-owned configuration
/// (`tpm_tcti`: `device:/dev/tpmrm0`, `swtpm:host=…,port=…`). Structures cross into ESAPI
/// as TPM wire bytes (built and parsed in Swift, converted by libtss2-mu), so no C union is
/// touched from Swift. Not thread-safe: one thread at a time.
package final class TPMConnection {
    /// The TCTI used when `tpm_tcti` is not set: the kernel's resource manager.
    package static let defaultTCTI = "device:/dev/tpmrm0"
    /// Every command is bounded: a TPM that does not answer within this is unreachable.
    static let commandTimeoutMilliseconds: Int32 = 10_000

    private var tcti: OpaquePointer?
    private var context: OpaquePointer?
    package let tctiName: String

    /// Connects. The TSS would log to stderr and read `TSS2_LOG`/`TSS2_LOGFILE` from the
    /// environment: both are set here, in the helper's own (empty) environment or the
    /// command line's, so that no log file can be chosen by anyone else.
    package init(tcti name: String) throws(TPMError) {
        tctiName = name
        guard Options.isValidTCTI(name) else {
            throw TPMError(.unreachable, "tpm_tcti '\(name)' is not a device:, swtpm: or mssim: TCTI")
        }
        unsetenv("TSS2_LOGFILE")
        setenv("TSS2_LOG", "all+none", 1)
        var tctiContext: OpaquePointer?
        var rc = Tss2_TctiLdr_Initialize(name, &tctiContext)
        guard rc == 0, let tctiContext else { throw TPMError("connect to \(name)", rc: rc == 0 ? 0xA000A : rc) }
        tcti = tctiContext
        var esys: OpaquePointer?
        rc = Esys_Initialize(&esys, tctiContext, nil)
        guard rc == 0, let esys else {
            var t: OpaquePointer? = tctiContext
            Tss2_TctiLdr_Finalize(&t)
            tcti = nil
            throw TPMError("connect to \(name)", rc: rc)
        }
        context = esys
        _ = Esys_SetTimeout(esys, TPMConnection.commandTimeoutMilliseconds)
    }

    deinit { close() }

    package func close() {
        if context != nil { Esys_Finalize(&context) }
        if tcti != nil { Tss2_TctiLdr_Finalize(&tcti) }
        context = nil
        tcti = nil
    }

    func esys(_ operation: String) throws(TPMError) -> OpaquePointer {
        guard let context else { throw TPMError(.unreachable, "\(operation): the TPM connection is closed") }
        return context
    }

    /// Runs one ESAPI call; a non-zero code becomes a classified error.
    func call(_ operation: String, _ body: (OpaquePointer) -> TSS2_RC) throws(TPMError) {
        let ctx = try esys(operation)
        let rc = body(ctx)
        guard rc == 0 else { throw TPMError(operation, rc: rc) }
    }

    /// Flushes a transient object or session; failures are ignored (it is cleanup).
    func flush(_ handle: ESYS_TR) {
        guard let context, handle != ESYS_TR(ESYS_TR_NONE) else { return }
        _ = Esys_FlushContext(context, handle)
    }

    // MARK: Commands

    /// TPM2_CreatePrimary under `hierarchy` from a TPM2B_PUBLIC template; returns the
    /// handle and the TPM2B_PUBLIC made.
    func createPrimary(_ hierarchy: ESYS_TR, template: [UInt8]) throws(TPMError) -> (ESYS_TR, [UInt8]) {
        var inPublic = try TPMWire.decode(template, into: TPM2B_PUBLIC(), Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var outside = TPM2B_DATA()
        var pcrs = TPML_PCR_SELECTION()
        var handle = ESYS_TR(ESYS_TR_NONE)
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        try call("TPM2_CreatePrimary") {
            Esys_CreatePrimary(
                $0, hierarchy, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                &sensitive, &inPublic, &outside, &pcrs, &handle, &outPublic, nil, nil, nil)
        }
        defer { Esys_Free(outPublic) }
        guard let outPublic else {
            flush(handle)
            throw TPMError(.failed, "TPM2_CreatePrimary: no public area")
        }
        do {
            return (handle, try TPMWire.encode(outPublic.pointee, Tss2_MU_TPM2B_PUBLIC_Marshal))
        } catch {
            flush(handle)
            throw error
        }
    }

    /// TPM2_Create under `parent`: the key's (TPM2B_PUBLIC, TPM2B_PRIVATE), not loaded.
    func create(parent: ESYS_TR, template: [UInt8]) throws(TPMError) -> (publicArea: [UInt8], privateArea: [UInt8]) {
        var inPublic = try TPMWire.decode(template, into: TPM2B_PUBLIC(), Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var outside = TPM2B_DATA()
        var pcrs = TPML_PCR_SELECTION()
        var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        try call("TPM2_Create") {
            Esys_Create(
                $0, parent, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                &sensitive, &inPublic, &outside, &pcrs, &outPrivate, &outPublic, nil, nil, nil)
        }
        defer {
            Esys_Free(outPrivate)
            Esys_Free(outPublic)
        }
        guard let outPrivate, let outPublic else { throw TPMError(.failed, "TPM2_Create: no key returned") }
        return (
            try TPMWire.encode(outPublic.pointee, Tss2_MU_TPM2B_PUBLIC_Marshal),
            try TPMWire.encode(outPrivate.pointee, Tss2_MU_TPM2B_PRIVATE_Marshal)
        )
    }

    /// TPM2_Load of a wrapped key under `parent`.
    func load(parent: ESYS_TR, publicArea: [UInt8], privateArea: [UInt8]) throws(TPMError) -> ESYS_TR {
        var inPublic = try TPMWire.decode(publicArea, into: TPM2B_PUBLIC(), Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        var inPrivate = try TPMWire.decode(privateArea, into: TPM2B_PRIVATE(), Tss2_MU_TPM2B_PRIVATE_Unmarshal)
        var handle = ESYS_TR(ESYS_TR_NONE)
        try call("TPM2_Load") {
            Esys_Load(
                $0, parent, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                &inPrivate, &inPublic, &handle)
        }
        return handle
    }

    /// TPM2_Sign of a SHA-256 digest with RSASSA: the TPMT_SIGNATURE bytes.
    func signRSASSA(_ key: ESYS_TR, digest: [UInt8]) throws(TPMError) -> [UInt8] {
        var inDigest = try TPMWire.decode(TPMWire.sized(digest), into: TPM2B_DIGEST(), Tss2_MU_TPM2B_DIGEST_Unmarshal)
        var scheme = try TPMWire.decode(
            TPMWire.rsassaSHA256, into: TPMT_SIG_SCHEME(), Tss2_MU_TPMT_SIG_SCHEME_Unmarshal)
        // A NULL-hierarchy ticket: allowed because the key is not restricted.
        var ticket = try TPMWire.decode(
            [0x80, 0x24, 0x40, 0x00, 0x00, 0x07, 0x00, 0x00], into: TPMT_TK_HASHCHECK(),
            Tss2_MU_TPMT_TK_HASHCHECK_Unmarshal)
        var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
        try call("TPM2_Sign") {
            Esys_Sign(
                $0, key, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                &inDigest, &scheme, &ticket, &signature)
        }
        defer { Esys_Free(signature) }
        guard let signature else { throw TPMError(.failed, "TPM2_Sign: no signature") }
        return try TPMWire.encode(signature.pointee, Tss2_MU_TPMT_SIGNATURE_Marshal)
    }

    /// TPM2_GetCapability of one TPM property (TPM_CAP_TPM_PROPERTIES); nil when absent.
    func property(_ property: UInt32) throws(TPMError) -> UInt32? {
        var more: TPMI_YES_NO = 0
        var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
        try call("TPM2_GetCapability") {
            Esys_GetCapability(
                $0, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                TPM2_CAP(TPM2_CAP_TPM_PROPERTIES), property, 1, &more, &data)
        }
        defer { Esys_Free(data) }
        guard let data else { return nil }
        let bytes = try TPMWire.encode(data.pointee, Tss2_MU_TPMS_CAPABILITY_DATA_Marshal)
        // capability u32, count u32, then (property u32, value u32) pairs.
        guard bytes.count >= 16, TPMWire.u32(bytes, 4) >= 1, TPMWire.u32(bytes, 8) == property else { return nil }
        return TPMWire.u32(bytes, 12)
    }
}

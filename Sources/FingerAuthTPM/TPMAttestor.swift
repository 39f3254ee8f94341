import CTSS2
import FingerAuthCore

/// The host's half of a key attestation (the authenticator's `POST /v1/keys/challenge`,
/// then `POST /v1/keys` with `attestation`): the EK certificate, an attestation key (AK)
/// made in the same TPM, the answer to the authenticator's credential challenge, and a
/// TPM2_Certify of the device key by the AK over the authenticator's nonce.
///
/// The AK is a primary of the endorsement hierarchy (restricted, sign only, fixedTPM): it
/// stays loaded from `attestationKey()` to `close()`. swtpm has three object slots, so the
/// EK is made only for the activation and flushed after it.
package final class TPMAttestor {
    /// The NV index of the RSA-2048 EK certificate (TCG EK Credential Profile).
    static let endorsementCertificateIndex: UInt32 = 0x01C0_0002
    /// Read the NV index in pieces no TPM refuses (TPM2_PT_NV_BUFFER_MAX is at least 512).
    static let nvChunk: UInt16 = 512

    let connection: TPMConnection
    private var ak = ESYS_TR(ESYS_TR_NONE)

    package init(connection: TPMConnection) { self.connection = connection }

    deinit { close() }

    package func close() {
        connection.flush(ak)
        ak = ESYS_TR(ESYS_TR_NONE)
    }

    /// The EK certificate (DER) from the TPM's NV storage.
    package func endorsementCertificate() throws(TPMError) -> [UInt8] {
        var index = ESYS_TR(ESYS_TR_NONE)
        do {
            try connection.call("read the EK certificate's NV index") {
                Esys_TR_FromTPMPublic(
                    $0, TPMAttestor.endorsementCertificateIndex, ESYS_TR(ESYS_TR_NONE),
                    ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &index)
            }
        } catch {
            throw TPMError(
                error.kind == .unreachable ? .unreachable : .failed,
                "this TPM has no EK certificate at NV index 0x1c00002 (\(error.description))")
        }
        defer { if let ctx = try? connection.esys("close") { _ = Esys_TR_Close(ctx, &index) } }
        var nvPublic: UnsafeMutablePointer<TPM2B_NV_PUBLIC>?
        try connection.call("TPM2_NV_ReadPublic") {
            Esys_NV_ReadPublic(
                $0, index, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &nvPublic, nil)
        }
        defer { Esys_Free(nvPublic) }
        guard let nvPublic else { throw TPMError(.failed, "TPM2_NV_ReadPublic: no answer") }
        // TPM2B_NV_PUBLIC: size, nvIndex u32, nameAlg u16, attributes u32, authPolicy TPM2B, dataSize u16.
        let bytes = try TPMWire.encode(nvPublic.pointee, Tss2_MU_TPM2B_NV_PUBLIC_Marshal)
        guard bytes.count >= 14 else { throw TPMError(.failed, "TPM2_NV_ReadPublic: short answer") }
        let policySize = Int(bytes[12]) << 8 | Int(bytes[13])
        let sizeAt = 14 + policySize
        guard bytes.count >= sizeAt + 2 else { throw TPMError(.failed, "TPM2_NV_ReadPublic: short answer") }
        let size = Int(bytes[sizeAt]) << 8 | Int(bytes[sizeAt + 1])
        guard size > 0, size <= 4096 else { throw TPMError(.failed, "EK certificate of \(size) bytes") }
        var certificate: [UInt8] = []
        while certificate.count < size {
            let piece = UInt16(min(Int(TPMAttestor.nvChunk), size - certificate.count))
            let offset = UInt16(certificate.count)
            var data: UnsafeMutablePointer<TPM2B_MAX_NV_BUFFER>?
            try connection.call("TPM2_NV_Read") {
                Esys_NV_Read(
                    $0, ESYS_TR(ESYS_TR_RH_OWNER), index, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE),
                    ESYS_TR(ESYS_TR_NONE), piece, offset, &data)
            }
            defer { Esys_Free(data) }
            guard let data,
                let content = TPMWire.unsized(try TPMWire.encode(data.pointee, Tss2_MU_TPM2B_MAX_NV_BUFFER_Marshal)),
                content.count == Int(piece)
            else { throw TPMError(.failed, "TPM2_NV_Read: short answer") }
            certificate += content
        }
        // The index may be larger than the certificate: keep the DER SEQUENCE only.
        return Self.trimmedDER(certificate)
    }

    /// A new AK, loaded until `close()`; its TPM2B_PUBLIC.
    package func attestationKey() throws(TPMError) -> [UInt8] {
        close()
        let (handle, publicArea) = try connection.createPrimary(
            ESYS_TR(ESYS_TR_RH_ENDORSEMENT),
            template: TPMTemplates.signingKey(restricted: true))
        ak = handle
        return publicArea
    }

    /// TPM2_ActivateCredential: the secret the authenticator wrapped for this TPM's EK and
    /// this AK's Name. Arguments are the contents of the TPM2B_ID_OBJECT and
    /// TPM2B_ENCRYPTED_SECRET, as the authenticator sends them.
    package func activate(credentialBlob: [UInt8], encryptedSecret: [UInt8]) throws(TPMError) -> [UInt8] {
        guard credentialBlob.count <= 1024, encryptedSecret.count <= 1024 else {
            throw TPMError(.failed, "challenge too large")
        }
        var blob = try TPMWire.decode(
            TPMWire.sized(credentialBlob), into: TPM2B_ID_OBJECT(), Tss2_MU_TPM2B_ID_OBJECT_Unmarshal)
        var secret = try TPMWire.decode(
            TPMWire.sized(encryptedSecret), into: TPM2B_ENCRYPTED_SECRET(),
            Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal)
        let (ek, _) = try connection.createPrimary(
            ESYS_TR(ESYS_TR_RH_ENDORSEMENT), template: TPMTemplates.endorsementKey)
        defer { connection.flush(ek) }
        let session = try endorsementSession()
        defer { connection.flush(session) }
        var digest: UnsafeMutablePointer<TPM2B_DIGEST>?
        try connection.call("TPM2_ActivateCredential") {
            Esys_ActivateCredential(
                $0, ak, ek, ESYS_TR(ESYS_TR_PASSWORD), session, ESYS_TR(ESYS_TR_NONE),
                &blob, &secret, &digest)
        }
        defer { Esys_Free(digest) }
        guard let digest,
            let content = TPMWire.unsized(try TPMWire.encode(digest.pointee, Tss2_MU_TPM2B_DIGEST_Marshal))
        else {
            throw TPMError(.failed, "TPM2_ActivateCredential: no secret")
        }
        return content
    }

    /// TPM2_Certify of `key` by the AK over `nonce`: (TPMS_ATTEST, TPMT_SIGNATURE) bytes.
    package func certify(_ key: TPMDeviceKey, nonce: [UInt8]) throws(TPMError) -> (attest: [UInt8], signature: [UInt8])
    {
        guard nonce.count <= 64 else { throw TPMError(.failed, "nonce too large") }
        var data = try TPMWire.decode(TPMWire.sized(nonce), into: TPM2B_DATA(), Tss2_MU_TPM2B_DATA_Unmarshal)
        var scheme = try TPMWire.decode(
            TPMWire.rsassaSHA256, into: TPMT_SIG_SCHEME(), Tss2_MU_TPMT_SIG_SCHEME_Unmarshal)
        var attest: UnsafeMutablePointer<TPM2B_ATTEST>?
        var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
        try connection.call("TPM2_Certify") {
            Esys_Certify(
                $0, key.handle, ak, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE),
                &data, &scheme, &attest, &signature)
        }
        defer {
            Esys_Free(attest)
            Esys_Free(signature)
        }
        guard let attest, let signature,
            let info = TPMWire.unsized(try TPMWire.encode(attest.pointee, Tss2_MU_TPM2B_ATTEST_Marshal))
        else {
            throw TPMError(.failed, "TPM2_Certify: no attestation")
        }
        return (info, try TPMWire.encode(signature.pointee, Tss2_MU_TPMT_SIGNATURE_Marshal))
    }

    /// A policy session that satisfies the EK's policy: PolicySecret(TPM_RH_ENDORSEMENT).
    private func endorsementSession() throws(TPMError) -> ESYS_TR {
        var symmetric = try TPMWire.decode([0x00, 0x10], into: TPMT_SYM_DEF(), Tss2_MU_TPMT_SYM_DEF_Unmarshal)
        var session = ESYS_TR(ESYS_TR_NONE)
        try connection.call("TPM2_StartAuthSession") {
            Esys_StartAuthSession(
                $0, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), nil, TPM2_SE(TPM2_SE_POLICY), &symmetric,
                TPMI_ALG_HASH(TPM2_ALG_SHA256), &session)
        }
        do {
            try connection.call("TPM2_PolicySecret") {
                Esys_PolicySecret(
                    $0, ESYS_TR(ESYS_TR_RH_ENDORSEMENT), session, ESYS_TR(ESYS_TR_PASSWORD),
                    ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), nil, nil, nil, 0, nil, nil)
            }
        } catch {
            connection.flush(session)
            throw error
        }
        return session
    }

    /// The DER SEQUENCE at the start of `bytes` (an NV index is often padded after it).
    package static func trimmedDER(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= 4, bytes[0] == 0x30 else { return bytes }
        let total: Int
        switch bytes[1] {
        case 0..<0x80: total = 2 + Int(bytes[1])
        case 0x81: total = 3 + Int(bytes[2])
        case 0x82: total = 4 + (Int(bytes[2]) << 8 | Int(bytes[3]))
        default: return bytes
        }
        return total <= bytes.count ? Array(bytes[0..<total]) : bytes
    }
}

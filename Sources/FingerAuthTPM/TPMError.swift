import CTSS2

/// A TPM command that failed, sorted into the states an admin can act on.
package struct TPMError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Kind: String, Sendable {
        /// No TPM answered at the configured TCTI (no device, swtpm not running, timeout).
        case unreachable
        /// The TPM is in dictionary-attack lockout: it refuses authorised use for a while.
        case lockout
        /// The TPM does not accept the key's wrapped blob: the TPM was cleared since the key
        /// was made, or the key file comes from another machine's TPM.
        case foreignKey = "foreign-key"
        /// The key file is not a TPM key this code can use.
        case badKeyFile = "bad-key-file"
        /// Anything else the TPM refused.
        case failed
    }

    package let kind: Kind
    /// What was being done, and the TSS's text for the code.
    package let description: String

    package init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// The error of `rc` returned by `operation`, classified.
    package init(_ operation: String, rc: TSS2_RC) {
        let text = Tss2_RC_Decode(rc).map { String(cString: $0) } ?? "0x" + String(rc, radix: 16)
        kind = TPMError.classify(rc)
        description = "\(operation): \(text)"
    }

    /// The TSS layer is the top byte; the TPM's own codes (layer 0) are format-one errors
    /// (bit 7) with the error number in the low 6 bits, or warnings (0x900 range).
    package static func classify(_ rc: TSS2_RC) -> Kind {
        let layer = rc >> 16
        if layer == 10 || layer == 8 { return .unreachable } // TCTI layer, resource manager TCTI
        guard layer == 0 else { return .failed }
        let code = rc & 0xFFFF
        if code & 0xFFF == 0x921 { return .lockout } // TPM_RC_LOCKOUT
        if code & 0x80 != 0 {
            // TPM_RC_INTEGRITY (0x1F) on a parameter or handle: the parent could not unwrap
            // the private blob. TPM_RC_BINDING (0x25) is a public/private pair that do not
            // belong together.
            let number = code & 0x3F
            if number == 0x1F || number == 0x25 { return .foreignKey }
        }
        return .failed
    }

    /// One sentence of what the admin should do about it.
    package var advice: String {
        switch kind {
        case .unreachable: return "check that the TPM named by tpm_tcti is present (device:/dev/tpmrm0) and answers"
        case .lockout:
            return
                "the TPM is in dictionary-attack lockout; wait for it to recover or reset it (tpm2_dictionarylockout --clear-lockout)"
        case .foreignKey, .badKeyFile:
            return
                "the TPM no longer holds this key (cleared, or another machine's TPM): run fingerauth key rotate --store tpm (it registers the new key), or key create --store tpm --force and register"
        case .failed: return "see the TPM's error above"
        }
    }
}

import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The server certificate chain and private key, PEM, read with `SafeFile` (no links,
/// regular files, size-capped). The key must belong to the user running the daemon and be
/// closed to group and others (0600 or stricter). The key bytes are cleared on deinit.
package final class TLSMaterial {
    package let certificatePEM: [UInt8]
    /// Secret. Never logged; cleared in deinit.
    private(set) var keyPEM: [UInt8]

    /// Reads both files; refuses links, non-regular files, oversized files and a key that
    /// is not owned by the effective user or is open to group/others.
    package init(certificatePath: String, keyPath: String) throws(SafeFileError) {
        certificatePEM = try SafeFile.read(
            certificatePath, rule: FileRule(owner: nil, forbiddenBits: 0o022, maxBytes: 256 * 1024))
        keyPEM = try SafeFile.read(
            keyPath, rule: FileRule(owner: UInt32(geteuid()), forbiddenBits: 0o077, maxBytes: 64 * 1024))
    }

    deinit {
        for i in keyPEM.indices { keyPEM[i] = 0 }
    }
}

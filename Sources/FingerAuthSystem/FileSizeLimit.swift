import CSystem

/// The caller's `RLIMIT_FSIZE`, asked before a write in a PAM host. In a setuid host the
/// caller sets the limits, and a write past the soft limit raises SIGXFSZ, whose default
/// action ends the host (sudo, su) instead of failing the write.
package enum FileSizeLimit {
    /// True when a file may grow to `size` bytes under the current soft limit.
    package static func permits(size: Int) -> Bool {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { return false }
        if limit.rlim_cur == rlim_t.max { return true } // RLIM_INFINITY
        return size >= 0 && UInt64(size) <= UInt64(limit.rlim_cur)
    }
}

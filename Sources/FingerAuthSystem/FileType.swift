import CSystem

/// The type bits of `st_mode`. Swift's Glibc module types `S_IFMT` and its values as
/// `mode_t`, plain C (the module's Embedded build) as `Int32`; these are `mode_t` in both.
package enum FileType {
    package static let regular: mode_t = 0o100000
    package static let directory: mode_t = 0o040000
    package static let symlink: mode_t = 0o120000
    package static let characterDevice: mode_t = 0o020000

    /// `mode`'s type (`mode & S_IFMT`).
    package static func of(_ mode: mode_t) -> mode_t { mode & 0o170000 }
}

/// User names that are safe to use as a directory name and a JWT subject: the portable
/// set (POSIX 3.437 plus the customary leading letter rule relaxed to allow `_`).
public enum UserName {
    public static let maxLength = 32

    /// True for `[A-Za-z0-9._-]{1,32}` not starting with `-` and not `.` or `..`.
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
        guard bytes[0] != UInt8(ascii: "-"), name != ".", name != ".." else { return false }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
        }
    }
}

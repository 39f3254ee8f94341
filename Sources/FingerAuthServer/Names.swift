/// Which user and host names the registry accepts: portable names only, so that a name is
/// never a path, an option or a log injection.
public enum Names {
    /// A portable user name: 1–64 of `A-Z a-z 0-9 . _ -`, not starting with `-` or `.`,
    /// and without `..`.
    public static func isValidUser(_ name: String) -> Bool {
        isPortable(name, limit: 64, extra: [UInt8(ascii: "_")])
    }

    /// A host id: 1–253 of `A-Z a-z 0-9 . _ -`, not starting with `-` or `.`, without `..`.
    public static func isValidHost(_ name: String) -> Bool {
        isPortable(name, limit: 253, extra: [UInt8(ascii: "_")])
    }

    private static func isPortable(_ name: String, limit: Int, extra: Set<UInt8>) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= limit,
              first != UInt8(ascii: "-"), first != UInt8(ascii: "."), !name.contains("..") else { return false }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) ||
                (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: ".") ||
                b == UInt8(ascii: "-") || extra.contains(b)
        }
    }
}

import FingerAuthCore

/// Which user and host names the registry accepts: user names by the one rule every part
/// of FingerAuth shares (`UserName`), host ids portable, so that a name is never a path,
/// an option or a log injection.
package enum Names {
    /// A user name as `UserName` has it: lower case, no trailing `.`, at most 32 bytes.
    package static func isValidUser(_ name: String) -> Bool {
        UserName.isValid(name)
    }

    /// A host id: 1–253 of `A-Z a-z 0-9 . _ -`, not starting with `-` or `.`, without `..`.
    package static func isValidHost(_ name: String) -> Bool {
        isPortable(name, limit: 253)
    }

    /// What a console sign-in looks up: a name an admin account may have been given, by
    /// today's rule or an older, looser one (`fingerauthd doctor` lists the latter), so
    /// that an account made before the rule still signs in. Never a user's identity.
    package static func isAdminLookup(_ name: String) -> Bool {
        isPortable(name, limit: 64)
    }

    private static func isPortable(_ name: String, limit: Int) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= limit,
            first != UInt8(ascii: "-"), first != UInt8(ascii: "."), !name.contains("..")
        else { return false }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: ".")
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }
}

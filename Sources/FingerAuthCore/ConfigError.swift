/// A configuration problem, naming the key (or line) so that an admin can fix it.
package struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where the problem is: `fingerauth.conf:12`, `pam.d argument`, or a file path.
    package var source: String
    /// The key concerned, when there is one.
    package var key: String?
    package var message: String

    package init(source: String, key: String? = nil, message: String) {
        self.source = source
        self.key = key
        self.message = message
    }

    package var description: String {
        if let key { return "\(source): \(key): \(message)" }
        return "\(source): \(message)"
    }
}

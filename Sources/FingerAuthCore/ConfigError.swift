/// A configuration problem, naming the key (or line) so that an admin can fix it.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where the problem is: `fingerauth.conf:12`, `pam.d argument`, or a file path.
    public var source: String
    /// The key concerned, when there is one.
    public var key: String?
    public var message: String

    public init(source: String, key: String? = nil, message: String) {
        self.source = source
        self.key = key
        self.message = message
    }

    public var description: String {
        if let key { return "\(source): \(key): \(message)" }
        return "\(source): \(message)"
    }
}

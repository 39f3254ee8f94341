import FingerAuthCore

/// Turns the pam.d arguments and the configuration file into `Options`.
package enum OptionsLoader {
    /// Splits pam.d arguments: `key=value`, or a bare word meaning `word=yes`.
    package static func parseArguments(_ arguments: [String]) -> [(key: String, value: String)] {
        arguments.map { arg in
            if let eq = arg.firstIndex(of: "=") {
                return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
            }
            return (arg, "")
        }
    }

    /// Defaults, then the configuration file (`conf=` or the default path; a missing
    /// default file is fine, a missing named one is not), then the arguments.
    /// `readFile` returns nil when the file does not exist and throws when it is unsafe.
    /// `requireURL` is false for commands that work without an authenticator (enroll, list).
    /// `unprivilegedPortStart` is the kernel's `net.ipv4.ip_unprivileged_port_start`
    /// (`Options.validated`).
    package static func load(
        arguments: [String], requireURL: Bool = true, unprivilegedPortStart: @autoclosure () -> Int = 1024,
        readFile: (String) throws(ConfigError) -> String?
    ) throws(ConfigError) -> Options {
        let args = parseArguments(arguments)
        var confPath = Options.defaultConfigPath
        var confNamed = false
        for (key, value) in args where key == "conf" {
            guard value.hasPrefix("/") else {
                throw ConfigError(source: "pam.d argument", key: "conf", message: "must be an absolute path")
            }
            confPath = value
            confNamed = true
        }
        var options = Options()
        if let text = try readFile(confPath) {
            for entry in try ConfigLines.parse(text, name: confPath) {
                guard entry.key != "conf" else {
                    throw ConfigError(source: entry.source, key: "conf", message: "only allowed on the pam.d line")
                }
                try options.set(entry.key, entry.value, source: entry.source)
            }
        } else if confNamed {
            throw ConfigError(source: confPath, key: "conf", message: "file does not exist")
        }
        for (key, value) in args where key != "conf" {
            try options.set(key, value, source: "pam.d argument")
        }
        guard requireURL || options.url != nil else { return options }
        return try options.validated(
            source: confNamed ? confPath : "configuration",
            unprivilegedPortStart: unprivilegedPortStart())
    }
}

import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// Where fingerauth-pam is: `pam_helper`, from the pam.d line, else the configuration
/// file, else the default. The module reads only that key and `conf=`; fingerauth-pam reads the whole configuration again and reports
/// anything else wrong with it. The file is read under the same rule as every
/// configuration file (root-owned, not writable by others), and a `conf=` that is not
/// absolute, a named file that is missing or an unsafe file are the same errors here as there.
package enum ModuleLocation {
    /// fingerauth-pam's path, or the configuration error that stops the login.
    package static func find(_ arguments: [String]) -> Result<String, ConfigError> {
        var confPath = Options.defaultConfigPath
        var confNamed = false
        var helper: String?
        for argument in arguments {
            if let value = value(of: "conf", in: argument) {
                guard value.hasPrefix("/") else {
                    return .failure(
                        ConfigError(source: "pam.d argument", key: "conf", message: "must be an absolute path"))
                }
                confPath = value
                confNamed = true
            } else if let value = value(of: "pam_helper", in: argument) {
                helper = value
            }
        }
        if helper == nil {
            do {
                if let text = try ConfigurationFile.read(confPath) {
                    helper = lastValue(of: "pam_helper", in: text)
                } else if confNamed {
                    return .failure(ConfigError(source: confPath, key: "conf", message: "file does not exist"))
                }
            } catch {
                return .failure(error)
            }
        }
        return .success(helper ?? Options.defaultPAMHelper)
    }

    /// The value of a pam.d argument `key=value`, nil for another key.
    private static func value(of key: String, in argument: String) -> String? {
        let prefix = Array((key + "=").utf8)
        let bytes = Array(argument.utf8)
        guard bytes.count >= prefix.count, Array(bytes[0..<prefix.count]) == prefix else { return nil }
        return String(decoding: bytes[prefix.count...], as: UTF8.self)
    }

    /// The last `key = value` line's value in a configuration file's text, by bytes (what
    /// `ConfigLines` reads as that key's entry when the file is well formed).
    package static func lastValue(of key: String, in text: String) -> String? {
        let wanted = Array(key.utf8)
        var found: String?
        for line in Array(text.utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let trimmed = trim(line)
            guard let equals = trimmed.firstIndex(of: UInt8(ascii: "=")), trimmed.first != UInt8(ascii: "#") else {
                continue
            }
            guard Array(trim(trimmed[trimmed.startIndex..<equals])) == wanted else { continue }
            found = String(decoding: trim(trimmed[(equals + 1)...]), as: UTF8.self)
        }
        return found
    }

    private static func trim(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var t = bytes
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
        while let f = t.first, blank(f) { t = t.dropFirst() }
        while let l = t.last, blank(l) { t = t.dropLast() }
        return t
    }
}

import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthSystem

/// The authenticator's offline-grant keys this host trusts (`<state_dir>/grant-keys`, root,
/// 0644): `{"keys":[JWK…]}`, written at enrollment and from each online answer that names
/// them (a rotation publishes the new key beside the old one). Each key's id is its own
/// thumbprint, computed here, never read from the file.
package struct GrantPins {
    package let path: String

    package init(stateDirectory: String) {
        path = StatePaths(root: stateDirectory, user: "").grantKeys
    }

    /// The pinned keys by thumbprint; empty when there is no file or it may not be trusted.
    package func keys() -> [String: GrantKeyJWK] {
        guard let bytes = try? SafeFile.read(path, rule: .config),
            let json = try? JSONParser(maxBytes: 64 * 1024, maxDepth: 6).parse(bytes)
        else { return [:] }
        return GrantPins.keys(in: json["keys"] ?? .null)
    }

    /// The P-256 keys of a JWK array, by thumbprint (anything else in it is skipped).
    package static func keys(in array: JSONValue) -> [String: GrantKeyJWK] {
        var found: [String: GrantKeyJWK] = [:]
        for value in (array.arrayValue ?? []).prefix(8) {
            guard let key = GrantKeyJWK(json: value), let kid = Digest.thumbprint(of: key) else { continue }
            found[kid] = key
        }
        return found
    }

    /// Pins the keys of `array` (an answer's `grant_keys`) in place of the file's, unless they
    /// are the same; an array without a usable key changes nothing. The keys pinned now.
    @discardableResult
    package func pin(_ array: JSONValue) throws(SafeFileError) -> [String: GrantKeyJWK] {
        let served = GrantPins.keys(in: array)
        let pinned = keys()
        guard !served.isEmpty, served != pinned else { return pinned }
        let list = served.sorted { $0.key < $1.key }.map { $0.value.json(kid: $0.key) }
        // Not fsynced: a pin lost in a crash comes back with the next online answer.
        try SafeFile.writeAtomically(
            path, JSONEncoding.encodeBytes(.object([("keys", .array(list))])) + [0x0A], mode: 0o644, durable: false)
        return served
    }
}

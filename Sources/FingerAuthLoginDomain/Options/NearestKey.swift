/// The known key a mistyped one was most likely meant to be, for "unknown key; did you mean
/// `timeout`?": the key of `OptionTable` at the smallest edit distance (insertions,
/// deletions, substitutions and swaps of two neighbours, ASCII case ignored), when that
/// distance is 1 for a key of at most 4 characters or at most 2 for a longer one, and no
/// other key is as near. Pure byte arithmetic on at most 64 bytes: the module's helper runs
/// it for every configuration error.
package enum NearestKey {
    /// Longer typed keys are not compared (nothing of the table is near them).
    static let maxBytes = 64

    /// The suggestion for `typed`; nil when no key is near enough or two are equally near.
    package static func suggestion(for typed: String) -> String? {
        guard !typed.isEmpty, typed.utf8.count <= maxBytes else { return nil }
        let word = lowered(typed)
        var best: (key: String, distance: Int)?
        var tied = false
        for entry in OptionTable.entries {
            let key = entry.key
            let limit = key.utf8.count <= 4 ? 1 : 2
            let distance = Self.distance(word, Array(key.utf8))
            guard distance <= limit else { continue }
            if let current = best {
                if distance < current.distance {
                    best = (key, distance)
                    tied = false
                } else if distance == current.distance {
                    tied = true
                }
            } else {
                best = (key, distance)
            }
        }
        guard let best, !tied, best.distance > 0 || best.key != typed else { return nil }
        return best.key
    }

    /// The optimal string alignment distance of `a` and `b` (Damerau–Levenshtein without
    /// edits of a moved pair), in two rows and the one before.
    static func distance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(min(previous[j] + 1, current[j - 1] + 1), previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, before[j - 2] + 1)
                }
                current[j] = value
            }
            before = previous
            previous = current
        }
        return previous[b.count]
    }

    /// `text`'s bytes with ASCII capitals made small; `-` read as `_` (`max-tries`).
    static func lowered(_ text: String) -> [UInt8] {
        text.utf8.map { byte in
            if byte >= 0x41 && byte <= 0x5A { return byte + 0x20 }
            return byte == UInt8(ascii: "-") ? UInt8(ascii: "_") : byte
        }
    }
}

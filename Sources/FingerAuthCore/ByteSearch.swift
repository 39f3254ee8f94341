/// Substring search by bytes. The standard library's `contains(_: String)` and
/// `firstRange(of:)` come from `_StringProcessing`, which the module's Embedded build does
/// not have; the texts searched here (paths, `{service}` placeholders) are ASCII patterns,
/// for which bytes and characters agree.
extension String {
    /// Whether `target`'s bytes occur in this string's UTF-8.
    package func containsBytes(_ target: String) -> Bool {
        ByteSearch.firstOffset(of: Array(target.utf8), in: Array(utf8), from: 0) != nil
    }

    /// Every occurrence of `target` replaced (no Foundation in the module).
    package func replacingAll(_ target: String, with replacement: String) -> String {
        let needle = Array(target.utf8)
        guard !needle.isEmpty else { return self }
        let bytes = Array(utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var start = 0
        while let found = ByteSearch.firstOffset(of: needle, in: bytes, from: start) {
            out += bytes[start..<found]
            out += replacement.utf8
            start = found + needle.count
        }
        out += bytes[start...]
        return String(decoding: out, as: UTF8.self)
    }
}

enum ByteSearch {
    /// The first offset at or after `start` where `needle` begins in `haystack`.
    static func firstOffset(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else {
            return needle.isEmpty ? start : nil
        }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}

extension String {
    /// A-Z as a-z, every other byte as it is: host names and scheme words, without the
    /// standard library's Unicode case tables (which the module's Embedded build would carry).
    package func asciiLowercased() -> String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}

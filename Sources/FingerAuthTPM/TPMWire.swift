import CTSS2

/// TPM wire bytes in and out of libtss2's C structures (libtss2-mu), and the few byte
/// helpers the TPM code needs.
package enum TPMWire {
    package typealias Unmarshal<T> = (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<T>?)
        ->
        TSS2_RC
    package typealias Marshal<T> = (UnsafePointer<T>?, UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?) ->
        TSS2_RC

    /// The structure in `bytes`, which must be used up exactly.
    package static func decode<T>(_ bytes: [UInt8], into value: T, _ unmarshal: Unmarshal<T>) throws(TPMError) -> T {
        var result = value
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer { buffer in
            withUnsafeMutablePointer(to: &result) { unmarshal(buffer.baseAddress, buffer.count, &offset, $0) }
        }
        guard rc == 0, offset == bytes.count else { throw TPMError(.badKeyFile, "a TPM structure does not parse") }
        return result
    }

    /// The wire bytes of `value`.
    package static func encode<T>(_ value: T, _ marshal: Marshal<T>) throws(TPMError) -> [UInt8] {
        var copy = value
        var buffer = [UInt8](repeating: 0, count: 4096)
        var offset = 0
        let rc = withUnsafePointer(to: &copy) { pointer in
            buffer.withUnsafeMutableBufferPointer { marshal(pointer, $0.baseAddress, $0.count, &offset) }
        }
        guard rc == 0, offset <= buffer.count else { throw TPMError(.failed, "a TPM structure does not marshal") }
        return Array(buffer[0..<offset])
    }

    /// A TPM2B: the 16-bit size, then the bytes (at most 65,535 of them are ever passed).
    package static func sized(_ bytes: [UInt8]) -> [UInt8] {
        let count = min(bytes.count, 0xFFFF)
        return [UInt8(count >> 8), UInt8(count & 0xFF)] + bytes.prefix(count)
    }

    /// The content of a TPM2B, without its size; nil when the size does not fit.
    package static func unsized(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= 2 else { return nil }
        let count = Int(bytes[0]) << 8 | Int(bytes[1])
        guard count == bytes.count - 2 else { return nil }
        return Array(bytes[2...])
    }

    package static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    package static func u32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// The big-endian u32 at `offset` (the caller checked the length).
    package static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard offset >= 0, offset + 4 <= bytes.count else { return 0 }
        return bytes[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// TPMT_SIG_SCHEME RSASSA with SHA-256.
    package static let rsassaSHA256: [UInt8] = [0x00, 0x14, 0x00, 0x0B]
}

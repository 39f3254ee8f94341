import COpenSSL
import FingerAuthCore

/// One PEM block of any label (RFC 7468), through OpenSSL's PEM_write_bio / PEM_read_bio:
/// the armour of key files that are not PKCS#8, such as `TSS2 PRIVATE KEY`.
package enum PEMBlock {
    /// `-----BEGIN <label>-----`, base64 of `der`, `-----END <label>-----`.
    package static func encode(label: String, der: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.last("PEM") }
        defer { BIO_free(bio) }
        let written = der.withUnsafeBytes { raw in
            PEM_write_bio(bio, label, "", raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count)
        }
        guard written > 0 else { throw CryptoError.last("PEM") }
        var data: UnsafeMutablePointer<CChar>?
        let length = fa_bio_mem_data(bio, &data)
        guard length > 0, let data else { throw CryptoError.last("PEM") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// The label and the decoded bytes of the first block; nil when there is none.
    package static func decode(_ pem: [UInt8]) -> (label: String, der: [UInt8])? {
        guard pem.count < 64 * 1024 else { return nil }
        return pem.withUnsafeBytes { raw -> (String, [UInt8])? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            var name: UnsafeMutablePointer<CChar>?
            var header: UnsafeMutablePointer<CChar>?
            var data: UnsafeMutablePointer<UInt8>?
            var length = 0
            guard PEM_read_bio(bio, &name, &header, &data, &length) == 1 else {
                ERR_clear_error()
                return nil
            }
            defer {
                CRYPTO_free(name, "pem", 0)
                CRYPTO_free(header, "pem", 0)
                if let data { OPENSSL_cleanse(data, length) }
                CRYPTO_free(data, "pem", 0)
            }
            guard let name, let data, length > 0 else { return nil }
            return (String(cString: name), Array(UnsafeBufferPointer(start: data, count: length)))
        }
    }

    /// The label of the first `-----BEGIN …-----` line, read without decoding.
    package static func label(_ pem: [UInt8]) -> String? {
        let marker = Array("-----BEGIN ".utf8)
        guard let start = pem.indices.first(where: { pem[$0...].starts(with: marker) }) else { return nil }
        let rest = pem[(start + marker.count)...]
        guard let end = rest.firstIndex(of: UInt8(ascii: "-")), end - rest.startIndex <= 64 else { return nil }
        return String(decoding: rest[rest.startIndex..<end], as: UTF8.self)
    }
}

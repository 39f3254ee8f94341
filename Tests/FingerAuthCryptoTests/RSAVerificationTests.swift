import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads
import XCTest

/// RS256 verification on a key's pooled contexts: a context is used again only after a
/// valid signature, so a forged signature can never leave one in a state that changes the
/// next answer, and threads verifying at once each get a context of their own.
final class RSAVerificationTests: XCTestCase {
    /// Generated once for the class (2048-bit generation is slow). `nonisolated(unsafe)`:
    /// only the test methods read it, one at a time on XCTest's thread; the verifying threads
    /// get the public key and the signature, never the private key.
    nonisolated(unsafe) static let signer = Result { try RSAPrivateKey.generate(bits: 2048) }
    let data = Array("header.payload".utf8)

    /// The public key and its valid signature of `data`.
    func keyAndSignature() throws -> (RSAPublicKey, [UInt8]) {
        let signer = try Self.signer.get()
        return (try RSAPublicKey(jwk: signer.publicJWK()), try signer.signRS256(data))
    }

    func testForgedSignaturesBetweenValidOnesChangeNoAnswer() throws {
        let (key, signature) = try keyAndSignature()
        var forged = signature
        forged[forged.count / 2] ^= 0x01
        let other = Array("header.other".utf8)
        var answers: [Bool] = []
        for _ in 0..<3 {
            answers.append(key.verifyRS256(signature: signature, data: data))
            answers.append(key.verifyRS256(signature: forged, data: data))
            answers.append(key.verifyRS256(signature: signature, data: other))
            answers.append(key.verifyRS256(signature: [], data: data))
            answers.append(key.verifyRS256(signature: Array(signature.prefix(255)), data: data))
        }
        XCTAssertEqual(answers, Array(repeating: [true, false, false, false, false], count: 3).flatMap { $0 })
    }

    func testThreadsVerifyingAtOnceEachGetTheRightAnswer() throws {
        let (key, signature) = try keyAndSignature()
        let data = data
        var forged = signature
        forged[0] ^= 0x80
        let wrong = ResultCount()
        var threads: [WorkerThread] = []
        for t in 0..<8 {
            let started = WorkerThread.start { [forged] in
                for i in 0..<200 {
                    let valid = (i + t) % 3 != 0
                    if key.verifyRS256(signature: valid ? signature : forged, data: data) != valid { wrong.add() }
                }
            }
            if case let .success(thread) = started { threads.append(thread) }
        }
        for thread in threads { thread.join() }
        XCTAssertEqual(threads.count, 8)
        XCTAssertEqual(wrong.value, 0, "answers that differed from the signature's truth")
    }
}

/// A counter several threads add to.
///
/// `@unchecked Sendable`: `count` only under `lock`.
final class ResultCount: @unchecked Sendable {
    private let lock = Lock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

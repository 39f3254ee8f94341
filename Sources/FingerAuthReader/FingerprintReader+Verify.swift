import CFPrint
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

extension FingerprintReader {
    /// Reads one finger and matches it against `prints` (serialized, labelled by finger
    /// name). One print: `fp_device_verify_sync`. Several: `fp_device_identify_sync` when the
    /// reader can identify, else `fp_device_verify_sync` on each print in turn (one scan each,
    /// a `.retry` with `nextPrintHint` before each further scan) until one matches; the whole
    /// round is one attempt. A retry request from the reader is reported through `events` as
    /// `.retry` and the scan starts again; it does not count as an attempt.
    ///
    /// Errors: `.badPrint` (corrupt, or made by another reader), `.timeout` at `deadline`,
    /// `.busy`, `.removed`, `.deviceError`, `.noPrints` for an empty list.
    package func verify(
        prints: [(finger: String, data: [UInt8])], deadline: Deadline,
        events: (HelperMessage) -> Void
    ) throws(ReaderError) -> VerifyResult {
        guard !prints.isEmpty else { throw ReaderError(.noPrints, "No enrolled print to compare with") }
        var owned: [OwnedPrint] = []
        for entry in prints {
            let print = try OwnedPrint(finger: entry.finger, data: entry.data)
            guard fp_print_compatible(print.pointer, device) != 0 else {
                throw ReaderError(.badPrint, "The print for \(entry.finger) was made with another reader")
            }
            owned.append(print)
        }
        // A match-on-chip reader identifies even one print: its answer names the print.
        if (owned.count > 1 || hasStorage) && supportsIdentify {
            return try identify(owned, deadline: deadline, events: events)
        }
        // A reader without identify needs one scan per print; the user is asked for each
        // further scan. The exposure per attempt is the same as identify over all prints.
        for (index, print) in owned.enumerated() {
            if index > 0 { events(.retry(hint: FingerprintReader.nextPrintHint)) }
            if try verifyOne(print, deadline: deadline, events: events) {
                return .match(finger: print.finger)
            }
        }
        return .noMatch
    }

    /// `verify(prints:deadline:events:)` with a deadline `seconds` from now.
    package func verify(
        prints: [(finger: String, data: [UInt8])], timeout seconds: Double,
        events: (HelperMessage) -> Void
    ) throws(ReaderError) -> VerifyResult {
        try verify(prints: prints, deadline: .after(seconds: seconds), events: events)
    }

    /// The hint between two prints when the reader cannot identify.
    package static let nextPrintHint = "Place the finger again to try your other enrolled fingers"

    /// One verify, started again after each retry request until a decision or an error.
    private func verifyOne(
        _ print: OwnedPrint, deadline: Deadline,
        events: (HelperMessage) -> Void
    ) throws(ReaderError) -> Bool {
        while true {
            let outcome = try withDeadline(deadline) { (cancellable) throws(ReaderError) -> Attempt<Bool> in
                var matched: gboolean = 0
                var scanned: OpaquePointer? = nil
                var error: UnsafeMutablePointer<GError>? = nil
                let ok = fp_device_verify_sync(
                    device, print.pointer, cancellable, nil, nil,
                    &matched, &scanned, &error)
                defer { if let scanned { g_object_unref(UnsafeMutableRawPointer(scanned)) } }
                guard ok == 0 else {
                    if let error { g_error_free(error) }
                    guard matched != 0 else { return .decided(false) }
                    if let refused = matchOnChipIdentity(scanned, expected: print) { return refused }
                    return .decided(true)
                }
                if chipDoesNotKnow(error) { return .decided(false) }
                return Attempt(ReaderError.take(error, context: "Verification failed"))
            }
            switch outcome {
            case let .decided(matched): return matched
            case let .retry(hint): events(.retry(hint: hint))
            case let .failed(error): throw error
            }
        }
    }

    /// One identify over all prints, started again after each retry request.
    private func identify(
        _ prints: [OwnedPrint], deadline: Deadline,
        events: (HelperMessage) -> Void
    ) throws(ReaderError) -> VerifyResult {
        guard let array = g_ptr_array_new() else { throw ReaderError(.deviceError, "Out of memory") }
        defer { g_ptr_array_unref(array) }
        for print in prints { g_ptr_array_add(array, UnsafeMutableRawPointer(print.pointer)) }
        while true {
            let outcome = try withDeadline(deadline) { (cancellable) throws(ReaderError) -> Attempt<String?> in
                var match: OpaquePointer? = nil
                var scanned: OpaquePointer? = nil
                var error: UnsafeMutablePointer<GError>? = nil
                let ok = fp_device_identify_sync(device, array, cancellable, nil, nil, &match, &scanned, &error)
                if let scanned { g_object_unref(UnsafeMutableRawPointer(scanned)) }
                var matchedFinger: String? = nil
                if let match {
                    matchedFinger =
                        prints.first(where: { $0.pointer == match || fp_print_equal($0.pointer, match) != 0 })?.finger
                    g_object_unref(UnsafeMutableRawPointer(match))
                }
                guard ok == 0 else {
                    if let error { g_error_free(error) }
                    return .decided(matchedFinger)
                }
                if chipDoesNotKnow(error) { return .decided(nil) }
                return Attempt(ReaderError.take(error, context: "Identification failed"))
            }
            switch outcome {
            case let .decided(finger): return finger.map { VerifyResult.match(finger: $0) } ?? .noMatch
            case let .retry(hint): events(.retry(hint: hint))
            case let .failed(error): throw error
            }
        }
    }
}

/// How one scan ended: a decision, a retry request, or an error.
enum Attempt<Decision> {
    case decided(Decision)
    case retry(String)
    case failed(ReaderError)

    init(_ outcome: GLibOutcome) {
        switch outcome {
        case let .retry(hint): self = .retry(hint)
        case let .failed(error): self = .failed(error)
        }
    }
}

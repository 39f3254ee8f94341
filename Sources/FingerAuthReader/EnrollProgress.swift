/// What an enrollment reports while it runs.
package enum EnrollProgress: Equatable, Sendable {
    /// A stage was completed (`completed` of `total`, `stage 3/5`).
    case stage(completed: Int, total: Int)
    /// The reader wants the finger again; the stage was not counted.
    case retry(hint: String)

    /// One line for a terminal or the helper's stdout: `STAGE 3/5` or `RETRY <hint>`.
    package var line: String {
        switch self {
        case let .stage(completed, total): return "STAGE \(completed)/\(total)"
        case let .retry(hint): return "RETRY " + hint
        }
    }
}

/// The outcome of a verification that ran to its end.
package enum VerifyResult: Equatable, Sendable {
    /// The finger matched the print of this finger name.
    case match(finger: String)
    /// A finger was read and matched none of the prints.
    case noMatch
}

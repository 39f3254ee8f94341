import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// The host's wall-clock floor (`<state_dir>/clock-floor`, root 0600, one decimal number of
/// seconds): the latest time the host's wall clock showed at an online answer, a sync or an
/// offline login. An offline login is refused while the clock is behind it
/// (`OfflineJudgement`): after a reboot the monotonic clock starts anew, and a firmware clock
/// set back would otherwise stop a grant's hours.
package struct ClockFloor {
    package let path: String

    package init(stateDirectory: String) {
        path = StatePaths(root: stateDirectory, user: "").clockFloor
    }

    /// The floor: 0 when no file was written yet; a refusal when the file may not be
    /// trusted (owner, mode, a link) or does not hold a time — no offline login then.
    package func read() -> Result<Int64, GrantRefusal> {
        let bytes: [UInt8]
        do {
            bytes = try SafeFile.read(path, rule: FileRule(forbiddenBits: 0o077, maxBytes: 64))
        } catch {
            if case .missing = error { return .success(0) }
            return .failure(GrantRefusal("clock-floor: \(error)"))
        }
        let text = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let seconds = Int64(text), seconds <= OfflineRecord.maxSeq
        else { return .failure(GrantRefusal("clock-floor does not hold a time")) }
        return .success(seconds)
    }

    /// Raises the floor to `wall` when that is later than the one kept (written atomically and
    /// synced); a floor that cannot be read is replaced. Two raises at once may keep the lower of
    /// two nearly equal times: both are times this host's clock showed.
    package func raise(to wall: Int64) {
        guard wall > 0, wall <= OfflineRecord.maxSeq else { return }
        if case let .success(kept) = read(), kept >= wall { return }
        try? SafeFile.writeAtomically(path, Array("\(wall)\n".utf8), mode: 0o600)
    }
}

import FingerAuthCore

/// The p50 and p95 of one stage over a host's recent logins (nearest rank), in milliseconds.
package struct StagePercentiles: Sendable, Equatable {
    package var p50: Int64
    package var p95: Int64
    /// How many logins reported this stage.
    package var count: Int

    package init(p50: Int64, p95: Int64, count: Int) {
        self.p50 = p50
        self.p95 = p95
        self.count = count
    }

    /// The percentiles of `values`; nil when there are none.
    package init?(_ values: [Int64]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func rank(_ percent: Int) -> Int64 {
            // Nearest rank: the smallest value with at least `percent`% of the values at or below it.
            let position = (percent * sorted.count + 99) / 100
            return sorted[min(sorted.count, max(1, position)) - 1]
        }
        self.init(p50: rank(50), p95: rank(95), count: sorted.count)
    }
}

/// A host's login times as the console shows them: the percentiles of each stage its helpers
/// reported (`LoginStageReport`) over its last accepted logins.
package struct LoginStageSummary: Sendable, Equatable {
    package var ready: StagePercentiles?
    package var match: StagePercentiles?
    package var connect: StagePercentiles?

    /// How many of a host's last accepted logins the console summarizes, and how far back.
    package static let logins = 1000
    package static let seconds: Int64 = 7 * 86_400

    package init(_ reports: [LoginStageReport]) {
        ready = StagePercentiles(reports.compactMap(\.ready))
        match = StagePercentiles(reports.compactMap(\.match))
        connect = StagePercentiles(reports.compactMap(\.connect))
    }
}

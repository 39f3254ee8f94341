import FingerAuthCore
import FingerAuthDomain
import XCTest

/// The helper's stage times as the authenticator reads them (whole milliseconds within
/// bounds, or nothing) and the console's percentiles of them (nearest rank).
final class LoginStageTests: XCTestCase {
    private func report(_ text: String) -> LoginStageReport? {
        guard let value = try? JSONParser().parse(text) else {
            XCTFail("not JSON: \(text)")
            return nil
        }
        return LoginStageReport(json: value)
    }

    func testTheHelpersReportReadsBackAsWritten() {
        let sent = LoginStageReport(ready: 9, match: 640, connect: 3)
        XCTAssertEqual(JSONEncoding.encode(sent.json), #"{"ready_ms":9,"match_ms":640,"connect_ms":3}"#)
        XCTAssertEqual(report(JSONEncoding.encode(sent.json)), sent)
        XCTAssertEqual(JSONEncoding.encode(LoginStageReport(ready: 9).json), #"{"ready_ms":9}"#)
    }

    func testUnknownMembersAreIgnoredAndAReportWithoutKnownOnesIsNone() {
        XCTAssertEqual(report(#"{"ready_ms":0,"answer_ms":5,"note":"x"}"#), LoginStageReport(ready: 0))
        XCTAssertNil(report(#"{"note":"x"}"#))
        XCTAssertNil(report("{}"))
    }

    func testAnythingButWholeMillisecondsWithinTenMinutesDropsTheReport() {
        for text in [
            #"{"ready_ms":-1}"#, #"{"ready_ms":600001}"#, #"{"ready_ms":1.5}"#, #"{"ready_ms":1e3}"#,
            #"{"ready_ms":"9"}"#, #"{"ready_ms":null}"#, #"{"ready_ms":9,"match_ms":99999999999999999999}"#,
            "[9]", "9", #""9""#, "null",
        ] {
            XCTAssertNil(report(text), text)
        }
        XCTAssertEqual(report(#"{"match_ms":600000}"#), LoginStageReport(match: 600_000))
    }

    func testPercentilesAreNearestRank() {
        XCTAssertNil(StagePercentiles([]))
        XCTAssertEqual(StagePercentiles([7]), StagePercentiles(p50: 7, p95: 7, count: 1))
        XCTAssertEqual(StagePercentiles([50, 10, 40, 20, 30]), StagePercentiles(p50: 30, p95: 50, count: 5))
        XCTAssertEqual(StagePercentiles([4, 1, 3, 2]), StagePercentiles(p50: 2, p95: 4, count: 4))
        let hundred = StagePercentiles((1...100).map { Int64($0) })
        XCTAssertEqual(hundred, StagePercentiles(p50: 50, p95: 95, count: 100))
    }

    func testASummaryTakesEachStageFromTheLoginsThatReportedIt() {
        let summary = LoginStageSummary([
            LoginStageReport(ready: 10, match: 700), LoginStageReport(ready: 20),
            LoginStageReport(ready: 30, connect: 2),
        ])
        XCTAssertEqual(summary.ready, StagePercentiles(p50: 20, p95: 30, count: 3))
        XCTAssertEqual(summary.match, StagePercentiles(p50: 700, p95: 700, count: 1))
        XCTAssertEqual(summary.connect, StagePercentiles(p50: 2, p95: 2, count: 1))
    }
}

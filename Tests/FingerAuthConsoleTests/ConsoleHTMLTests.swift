import FingerAuthConsole
import XCTest

/// The console's HTML as a browser receives it: every outside text inert, times both ways,
/// the pieces every page is made of.
final class ConsoleHTMLTests: XCTestCase {
    func testEscapingMakesMarkupAndQuotesInert() {
        XCTAssertEqual(
            ConsoleHTML.escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;")
    }

    func testControlCharactersAreShownAsReplacementCharacters() {
        XCTAssertEqual(ConsoleHTML.escape("a\u{1B}[31mb\u{7F}\nc"), "a\u{FFFD}[31mb\u{FFFD}\u{FFFD}c")
        XCTAssertEqual(ConsoleHTML.escape("naïve ✓"), "naïve ✓")
    }

    func testTimesAreShownInUTC() {
        XCTAssertEqual(ConsoleHTML.time(0), "1970-01-01 00:00:00")
        XCTAssertEqual(ConsoleHTML.time(1_700_000_000), "2023-11-14 22:13:20")
    }

    func testTheThreeTimeFormsParseToSecondsSinceTheEpoch() {
        XCTAssertEqual(ConsoleHTML.parseTime("1970-01-01"), 0)
        XCTAssertEqual(ConsoleHTML.parseTime("2023-11-14 22:13"), 1_700_000_000 - 20)
        XCTAssertEqual(ConsoleHTML.parseTime("2023-11-14T22:13"), 1_700_000_000 - 20)
        XCTAssertEqual(ConsoleHTML.parseTime("2024-02-29"), 1_709_164_800)
    }

    func testImpossibleOrMalformedDatesAreRefusedNotRolledOver() {
        for text in [
            "2023-02-31", "2023-02-29", "2023-13-01", "2023-00-10", "1969-12-31", "2023-1-01", "2023/01/01",
            "2023-01-01 24:00", "2023-01-01 10:60", "2023-01-01X10:00", "2023-01-01 10:00:00", "", "yyyy-mm-dd",
        ] {
            XCTAssertNil(ConsoleHTML.parseTime(text), text)
        }
    }

    func testAPageSignedInCarriesTheNavigationTheSignOutFormAndTheEscapedAdmin() {
        let page = ConsoleHTML.page(
            title: "Keys <all>", admin: "<b>root</b>", csrf: "tok\"en", current: "/keys", body: "B")
        XCTAssertTrue(page.contains("<title>Keys &lt;all&gt; · FingerAuth</title>"), page)
        XCTAssertTrue(page.contains("<a href=\"/keys\" class=\"current\">Keys</a>"), page)
        XCTAssertTrue(page.contains("<a href=\"/audit\">Audit log</a>"), page)
        XCTAssertTrue(page.contains("<input type=\"hidden\" name=\"csrf\" value=\"tok&quot;en\">"), page)
        XCTAssertTrue(page.contains("<span class=\"who\">&lt;b&gt;root&lt;/b&gt;</span>"), page)
        XCTAssertFalse(page.contains("<script"), "no script on any page")
    }

    func testAPageSignedOutHasNoNavigation() {
        let page = ConsoleHTML.page(title: "Sign in", admin: nil, csrf: nil, body: "<form></form>")
        XCTAssertFalse(page.contains("<nav>"))
        XCTAssertTrue(page.contains("<h1>Sign in</h1>\n<form></form>"), page)
    }

    func testAMessageIsEscapedAndNoMessageIsNothing() {
        XCTAssertEqual(ConsoleHTML.message(nil), "")
        XCTAssertEqual(
            ConsoleHTML.message("key <k1> revoked"), "<p class=\"message\" id=\"message\">key &lt;k1&gt; revoked</p>")
    }

    func testATableEscapesItsHeadersAndGivesRowsTheirClass() {
        let table = ConsoleHTML.table(
            id: "keys", headers: ["kid", "<state>"], rows: [["a", "b"], ["c", "d"]], classes: [1: "attention"])
        XCTAssertEqual(
            table,
            "<table id=\"keys\"><thead><tr><th>kid</th><th>&lt;state&gt;</th></tr></thead><tbody>\n"
                + "<tr><td>a</td><td>b</td></tr>\n<tr class=\"attention\"><td>c</td><td>d</td></tr>\n</tbody></table>")
    }

    func testAButtonPostsItsEscapedFieldsAndTheCSRFToken() {
        let form = ConsoleHTML.button(
            "Revoke \"k\"", action: "/keys/revoke", fields: [("kid", "a\"b")], csrf: "t", cls: "danger")
        XCTAssertEqual(
            form,
            "<form class=\"inline\" method=\"post\" action=\"/keys/revoke\"><input type=\"hidden\" name=\"kid\" value=\"a&quot;b\">"
                + "<input type=\"hidden\" name=\"csrf\" value=\"t\"><button type=\"submit\" class=\"danger\">Revoke &quot;k&quot;</button></form>"
        )
    }

    func testPercentEncodingKeepsOnlyUnreservedCharacters() {
        XCTAssertEqual(AdminConsole.percentEncode("alice smith/ü~._-"), "alice%20smith%2F%C3%BC~._-")
        XCTAssertEqual(AdminConsole.percentEncode("\n"), "%0A")
    }

    func testThePagerLinksOnlyToPagesThatExist() {
        XCTAssertEqual(
            AdminConsole.pager("/keys", page: 1, more: false), "<p class=\"pager\"><span id=\"page\">page 1</span></p>")
        XCTAssertEqual(
            AdminConsole.pager("/keys", page: 2, more: true),
            "<p class=\"pager\"><a id=\"previous\" href=\"/keys?page=1\">Previous</a> <span id=\"page\">page 2</span> "
                + "<a id=\"next\" href=\"/keys?page=3\">Next</a></p>")
    }

    func testAnEKIsShownByItsFirstSixteenDigitsWithTheWholeNameAsTitle() {
        let ek = String(repeating: "ab", count: 32)
        XCTAssertEqual(
            AdminConsole.ekCell(ek), "<code class=\"ek\" title=\"\(ek)\">\(String(ek.prefix(16)))</code>")
        XCTAssertEqual(AdminConsole.ekCell(nil), "")
        XCTAssertTrue(AdminConsole.ekCell("<x>").contains("title=\"&lt;x&gt;\""))
    }

    func testTheChartDrawsAcceptedAndRefusedBarsInTheirColumns() {
        let start: Int64 = 1_700_000_000 - 1_700_000_000 % 3600
        let svg = ConsoleChart.svg(
            hours: [(hour: start, accepted: 4, refused: 0), (hour: start + 7200, accepted: 2, refused: 2)], from: start)
        XCTAssertTrue(svg.hasPrefix("<svg id=\"chart\""), svg)
        XCTAssertTrue(svg.contains("<rect class=\"accepted\" x=\"0\" y=\"0\" width=\"4\" height=\"160\">"), svg)
        XCTAssertTrue(svg.contains("<rect class=\"accepted\" x=\"10\" y=\"80\" width=\"4\" height=\"80\">"), svg)
        XCTAssertTrue(svg.contains("<rect class=\"refused\" x=\"10\" y=\"0\" width=\"4\" height=\"80\">"), svg)
        XCTAssertEqual(svg.components(separatedBy: "<rect").count - 1, 3, "no bar for zero")
        XCTAssertTrue(svg.contains("2 accepted, 2 refused"), svg)
    }

    func testTheChartLeavesOutHoursBeforeItsStartOrAfterItsWeek() {
        let start: Int64 = 3600 * 1000
        let svg = ConsoleChart.svg(
            hours: [
                (hour: start - 3600, accepted: 1, refused: 0), (hour: start + 168 * 3600, accepted: 1, refused: 0),
            ],
            from: start)
        XCTAssertFalse(svg.contains("<rect"), svg)
    }
}

/// The admin console as a listener of surface `.console` serves it (FingerAuthConsole's
/// `AdminConsole`; the daemon hands it to that listener).
package protocol ConsoleSurface: Sendable {
    /// The query parameters its pages read: the transport looks up only these.
    var queryNames: [String] { get }
    /// One console request from `address`, answered.
    func answer(_ request: HTTPRequest, address: String) -> HTTPResponse
}

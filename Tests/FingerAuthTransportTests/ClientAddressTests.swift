import FingerAuthTransport
import XCTest

/// Who a request is counted against: the peer, or the address a trusted proxy appended.
final class ClientAddressTests: XCTestCase {
    func testTheClientIsThePeerUnlessThePeerIsATrustedProxy() throws {
        let none = ClientAddress()
        XCTAssertEqual(none.resolve(peer: "10.0.0.5", forwardedFor: "1.2.3.4"), "10.0.0.5")
        let proxies = try XCTUnwrap(ClientAddress.networks("10.0.0.0/8, 192.168.1.5"))
        let lb = ClientAddress(trustedProxies: proxies)
        XCTAssertEqual(lb.resolve(peer: "192.168.1.5", forwardedFor: "1.2.3.4"), "1.2.3.4")
        // Whatever a client writes left of what the balancer appended is not believed.
        XCTAssertEqual(lb.resolve(peer: "10.1.1.1", forwardedFor: "6.6.6.6, 1.2.3.4"), "1.2.3.4")
        XCTAssertEqual(lb.resolve(peer: "10.1.1.1", forwardedFor: "6.6.6.6, 1.2.3.4, 10.2.2.2"), "1.2.3.4")
        XCTAssertEqual(lb.resolve(peer: "10.1.1.1", forwardedFor: nil), "10.1.1.1")
        XCTAssertEqual(lb.resolve(peer: "10.1.1.1", forwardedFor: "not-an-address"), "10.1.1.1")
        XCTAssertEqual(lb.resolve(peer: "10.1.1.1", forwardedFor: "10.9.9.9"), "10.9.9.9")
        // A stranger cannot name themselves someone else.
        XCTAssertEqual(lb.resolve(peer: "8.8.8.8", forwardedFor: "1.2.3.4"), "8.8.8.8")
        XCTAssertEqual(none.resolve(peer: "2001:db8::1:2:3:4", forwardedFor: nil), "2001:db8::")
        XCTAssertEqual(none.resolve(peer: "::ffff:10.0.0.5", forwardedFor: nil), "10.0.0.5")
        XCTAssertNil(ClientAddress.networks("10.0.0.0/33"))
        XCTAssertNil(ClientAddress.networks("example.com"))
    }
}

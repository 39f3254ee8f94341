import FingerAuthSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `net.ipv4.ip_unprivileged_port_start` as `allow_http` reads it.
final class KernelSettingsTests: XCTestCase {
    func value(of text: String?) -> Int {
        let path = "/tmp/fa-kernel-\(getpid())"
        defer { unlink(path) }
        if let text {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        return KernelSettings.unprivilegedPortStart(path: path)
    }

    func testTheKernelsValueIsRead() {
        XCTAssertEqual(value(of: "1024\n"), 1024)
        XCTAssertEqual(value(of: "80\n"), 80)
    }

    func testAMissingFileMeansTheKernelsDefault() {
        XCTAssertEqual(value(of: nil), 1024)
    }

    func testNonsenseMeansNoPrivilegedPort() {
        XCTAssertEqual(value(of: "lots\n"), 0)
        XCTAssertEqual(value(of: "70000\n"), 0)
    }

    func testThisMachinesValue() {
        let live = KernelSettings.unprivilegedPortStart()
        XCTAssertTrue((0...65536).contains(live))
    }
}

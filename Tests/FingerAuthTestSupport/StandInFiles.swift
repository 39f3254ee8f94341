import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A temporary folder for files laid out as the kernel, logind, sshd and the module's
/// session line leave them; a test case makes one in setUp and removes it in tearDown.
open class StandInFilesTestCase: XCTestCase {
    public var root = ""

    /// The folder's name before mkdtemp's six characters.
    open var folderPrefix: String { "/tmp/fa-standin-" }

    override open func setUp() {
        var template = Array((folderPrefix + "XXXXXX").utf8CString)
        root = template.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return "" }
            return String(cString: base)
        }
        XCTAssertFalse(root.isEmpty)
    }

    override open func tearDown() {
        _ = system("rm -rf '\(root)'")
    }

    /// Writes `text` to `name` under the folder with exactly `mode`.
    public func write(_ name: String, _ text: String, mode: mode_t = 0o644) {
        let path = root + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        XCTAssertGreaterThanOrEqual(fd, 0, path)
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, mode)
        close(fd)
    }
}

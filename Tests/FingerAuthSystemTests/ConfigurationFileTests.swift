import FingerAuthCore
import FingerAuthSystem
import FingerAuthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The one reader of a configuration file (the module, the agent, the command line and
/// fingerauthd): what it takes, and the words of what it refuses.
final class ConfigurationFileTests: StandInFilesTestCase {
    override var folderPrefix: String { "/tmp/fa-config-" }

    func testReadsASafeFileAndSaysNilForAMissingOne() throws {
        write("fingerauth.conf", "url = https://a.example/v1/login\n")
        XCTAssertEqual(try ConfigurationFile.read(root + "/fingerauth.conf"), "url = https://a.example/v1/login\n")
        XCTAssertNil(try ConfigurationFile.read(root + "/missing.conf"))
    }

    func testAnUnsafeFileIsRefusedWithItsFix() {
        let path = root + "/open.conf"
        write("open.conf", "debug = yes\n", mode: 0o664)
        XCTAssertThrowsError(try ConfigurationFile.read(path)) { error in
            XCTAssertEqual(
                "\(error)", "\(path): mode 664 is too open; fix: chown root:root \(path) && chmod 644 \(path)")
        }
        XCTAssertEqual(symlink(path, root + "/link.conf"), 0)
        XCTAssertThrowsError(try ConfigurationFile.read(root + "/link.conf")) { error in
            XCTAssertEqual("\(error)", "\(root)/link.conf: is a symbolic link")
        }
    }

    /// fingerauthd's file may belong to the user it runs as; the host's must be root's.
    func testOwnerRule() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root to give the file away") }
        let path = root + "/daemon.conf"
        write("daemon.conf", "listen = 127.0.0.1:0\n")
        XCTAssertEqual(chown(path, 4242, 4242), 0)
        XCTAssertThrowsError(try ConfigurationFile.read(path, owner: .rootOrRunningUser)) { error in
            XCTAssertTrue("\(error)".contains("owned by uid 4242, must be owned by root"), "\(error)")
        }
        XCTAssertThrowsError(try ConfigurationFile.read(path))
    }
}

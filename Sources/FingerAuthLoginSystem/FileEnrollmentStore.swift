import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// Whether a user is enrolled, as the module sees it (`StatePaths`): the user directory
/// is root-owned and closed to others and holds a device key, and the prints are there —
/// FingerAuth's own (`reader = libfprint`), fprintd's (`reader = fprintd`: the module cannot
/// ask fprintd, the helper does), or either (`reader = auto`: FingerAuth's, or fprintd
/// installed). The module only looks; the login helper reads and checks the files themselves.
package struct FileEnrollmentStore: EnrollmentStore {
    /// Whether fprintd is installed (its D-Bus service file); a parameter for tests.
    let fprintdInstalled: () -> Bool

    package init(fprintdInstalled: @escaping () -> Bool = { SafeFile.exists(Fprintd.serviceFile) }) {
        self.fprintdInstalled = fprintdInstalled
    }

    package func enrollment(of user: String, options: Options) -> EnrollmentState {
        let paths = StatePaths(root: options.stateDirectory, user: user)
        do {
            try SafeFile.checkDirectory(paths.userDirectory, rule: .privateDirectory)
        } catch {
            if case .missing = error { return .notEnrolled }
            return .unsafe(error.description)
        }
        guard SafeFile.exists(paths.deviceKey) else { return .notEnrolled }
        let prints = SafeFile.list(paths.printsDirectory).filter { $0.hasSuffix(StatePaths.printSuffix) }
        switch options.reader {
        case .libfprint: return prints.isEmpty ? .notEnrolled : .enrolled
        case .fprintd: return .enrolled
        case .auto: return !prints.isEmpty || fprintdInstalled() ? .enrolled : .notEnrolled
        }
    }
}

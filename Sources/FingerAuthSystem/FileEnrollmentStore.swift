import FingerAuthCore

/// Whether a user is enrolled, as the module sees it (`StatePaths`): the user directory
/// is root-owned and closed to others, and holds at least one print and a device key. The
/// module only looks; the login helper reads and checks the files themselves.
public struct FileEnrollmentStore: EnrollmentStore {
    public init() {}

    public func enrollment(of user: String, options: Options) -> EnrollmentState {
        let paths = StatePaths(root: options.stateDirectory, user: user)
        do {
            try SafeFile.checkDirectory(paths.userDirectory, rule: .privateDirectory)
        } catch {
            if case .missing = error { return .notEnrolled }
            return .unsafe(error.description)
        }
        let prints = SafeFile.list(paths.printsDirectory).filter { $0.hasSuffix(StatePaths.printSuffix) }
        guard !prints.isEmpty, SafeFile.exists(paths.deviceKey) else { return .notEnrolled }
        return .enrolled
    }
}

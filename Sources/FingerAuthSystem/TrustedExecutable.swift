import CSystem

/// The login helper's file, opened `fa_o_path()|O_NOFOLLOW` after every directory on the way to
/// it was opened the same way and checked with `fstat`: root-owned, and not writable by
/// group or others — except a root-owned directory with the sticky bit (`/tmp`), where
/// nobody but root can rename or replace what root put there, and whatever lies below
/// must again be root-owned. The file itself: regular, root-owned, not writable by group
/// or others, executable. The module executes the descriptor (`execveat`), so nothing can
/// be swapped in between the check and the start.
package final class TrustedExecutable {
    /// The `fa_o_path()` descriptor, owned by this object.
    package let descriptor: Int32
    package let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Opens and checks `path`; the error text names the component and the rule.
    package static func open(_ path: String) -> Result<TrustedExecutable, SpawnFailure> {
        func refuse(_ what: String) -> Result<TrustedExecutable, SpawnFailure> {
            .failure(SpawnFailure("\(path): \(what)"))
        }
        guard path.hasPrefix("/"), path.utf8.count < 4096 else { return refuse("not an absolute path") }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let fileName = parts.last, !parts.contains(".."), !parts.contains(".") else {
            return refuse("not a plain path")
        }
        var directory = fa_open("/", fa_o_path() | O_DIRECTORY | O_CLOEXEC, 0)
        guard directory >= 0 else { return refuse("cannot open /") }
        var walked = ""
        for part in parts.dropLast() {
            if let problem = checkDirectory(directory, walked.isEmpty ? "/" : walked) {
                close(directory)
                return .failure(SpawnFailure(problem))
            }
            walked += "/" + part
            let next = fa_openat(directory, part, fa_o_path() | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
            let openErrno = fa_errno()
            close(directory)
            guard next >= 0 else {
                return .failure(
                    SpawnFailure(
                        "\(walked): "
                            + (openErrno == ENOTDIR
                                ? "not a directory (or a symbolic link)"
                                : String(cString: strerror(openErrno)))))
            }
            directory = next
        }
        if let problem = checkDirectory(directory, walked.isEmpty ? "/" : walked) {
            close(directory)
            return .failure(SpawnFailure(problem))
        }
        let fd = fa_openat(directory, fileName, fa_o_path() | O_NOFOLLOW | O_CLOEXEC, 0)
        let openErrno = fa_errno()
        close(directory)
        guard fd >= 0 else { return refuse(String(cString: strerror(openErrno))) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            return refuse("cannot stat")
        }
        let problem: String?
        switch true {
        case FileType.of(st.st_mode) == FileType.symlink: problem = "is a symbolic link"
        case FileType.of(st.st_mode) != FileType.regular: problem = "not a regular file"
        case st.st_uid != 0: problem = "not owned by root"
        case st.st_mode & 0o022 != 0: problem = "writable by group or others"
        case st.st_mode & 0o100 == 0: problem = "not executable"
        default: problem = nil
        }
        if let problem {
            close(fd)
            return refuse(problem)
        }
        return .success(TrustedExecutable(descriptor: fd, path: path))
    }

    /// Nil when the directory open as `fd` is root-owned and closed to writers other than
    /// root (or sticky); else the reason.
    private static func checkDirectory(_ fd: Int32, _ name: String) -> String? {
        SafeFile.rootDirectoryProblem(fd, name)
    }
}

/// Why the helper could not be started; the text names the path and the rule.
package struct SpawnFailure: Error, Equatable, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

#if canImport(Glibc)
import Glibc
#endif
import CSystem
import FingerAuthSystem

/// One piece of work on a thread of its own, and a bounded wait for its end. The helper
/// reaches the authenticator while the reader opens; the wait ends at a deadline whether or
/// not the work did (the module kills the whole process at its own deadline anyway).
final class BackgroundWork {
    private let readEnd: Int32
    private var finished = false

    /// Starts `work`; nil when no thread or pipe could be had (the caller then runs it inline).
    init?(_ work: @escaping () -> Void) {
        var fds: [Int32] = [-1, -1]
        guard fa_pipe2(&fds, O_CLOEXEC) == 0 else { return nil }
        readEnd = fds[0]
        let box = Unmanaged.passRetained(WorkBox(work: work, doneFD: fds[1])).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let box = Unmanaged<WorkBox>.fromOpaque(argument).takeRetainedValue()
            box.work()
            var byte: UInt8 = 1
            _ = write(box.doneFD, &byte, 1)
            close(box.doneFD)
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<WorkBox>.fromOpaque(box).release()
            close(fds[0])
            close(fds[1])
            return nil
        }
        pthread_detach(thread)
    }

    /// True once the work has ended; false when `deadline` passed first.
    func wait(until deadline: MonotonicInstant) -> Bool {
        if finished { return true }
        while true {
            var pfd = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, deadline.remaining)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return false }
            finished = true
            return true
        }
    }

    deinit { close(readEnd) }
}

private final class WorkBox {
    let work: () -> Void
    let doneFD: Int32
    init(work: @escaping () -> Void, doneFD: Int32) {
        self.work = work
        self.doneFD = doneFD
    }
}

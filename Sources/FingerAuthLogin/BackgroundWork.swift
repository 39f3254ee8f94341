import CSystem
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// A one-shot event that one thread fires and another waits for with a deadline: a pipe,
/// so that the wait is a `poll` and the fire is one `write`, both safe from any thread.
///
/// `@unchecked Sendable`: `fire` touches only the write end (one write(2)); `wait` and
/// `seen` belong to the one thread that waits. The pipe orders what the firing thread did
/// before `fire` before what the waiting thread does after `wait` returned true.
final class OneShotSignal: @unchecked Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32
    private var seen = false

    /// Nil when no pipe could be had.
    init?() {
        var fds: [Int32] = [-1, -1]
        guard fa_pipe2(&fds, O_CLOEXEC) == 0 else { return nil }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    /// Fires the event (more than once is harmless: the pipe holds the bytes).
    func fire() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// True once the event has fired; false when `deadline` passed first.
    func wait(until deadline: MonotonicInstant) -> Bool {
        if seen { return true }
        while true {
            var pfd = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, deadline.remaining)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return false }
            seen = true
            return true
        }
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}

/// One piece of work on a thread of its own, and a bounded wait for its end. The helper
/// reaches the authenticator and signs ahead while the reader opens; the wait ends at a
/// deadline whether or not the work did (the module kills the whole process at its own
/// deadline anyway).
final class BackgroundWork {
    private let done: OneShotSignal

    /// Starts `work`; nil when no thread or pipe could be had (the caller then runs it inline).
    init?(_ work: @escaping @Sendable () -> Void) {
        guard let done = OneShotSignal() else { return nil }
        self.done = done
        let box = Unmanaged.passRetained(WorkBox(work: work, done: done)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let box = Unmanaged<WorkBox>.fromOpaque(argument).takeRetainedValue()
                box.work()
                box.done.fire()
                return nil
            }, box)
        guard rc == 0 else {
            Unmanaged<WorkBox>.fromOpaque(box).release()
            return nil
        }
        pthread_detach(thread)
    }

    /// True once the work has ended; false when `deadline` passed first.
    func wait(until deadline: MonotonicInstant) -> Bool {
        done.wait(until: deadline)
    }
}

private final class WorkBox: Sendable {
    let work: @Sendable () -> Void
    let done: OneShotSignal
    init(work: @escaping @Sendable () -> Void, done: OneShotSignal) {
        self.work = work
        self.done = done
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own (pthread_create) running one closure, joined with `join()`: the
/// group commit's writer, the pruner, the request-head watchdog.
///
/// `@unchecked Sendable`: holds one pthread_t, set in `init`; the thread that started it
/// joins it, once.
package final class WorkerThread: @unchecked Sendable {
    /// The closure, handed to the new thread through pthread_create's one pointer.
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private let thread: pthread_t

    private init(_ thread: pthread_t) { self.thread = thread }

    /// Starts `body` on a new thread; the reason (strerror) when it could not be created.
    package static func start(_ body: @escaping @Sendable () -> Void) -> Result<WorkerThread, ThreadStartError> {
        var created = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(
            &created, nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            return .failure(ThreadStartError(message: String(cString: strerror(rc))))
        }
        return .success(WorkerThread(created))
    }

    /// Waits for the closure to return (pthread_join).
    package func join() {
        pthread_join(thread, nil)
    }
}

/// Why a thread could not be created: pthread_create's error as strerror names it.
package struct ThreadStartError: Error, CustomStringConvertible, Sendable {
    package let message: String

    package var description: String { message }
}

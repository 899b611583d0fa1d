#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts detached threads for loops that run on a thread of their own.
enum LoopThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Runs `body` on a new detached thread.
    ///
    /// - Throws: ``TimerError/core(_:)`` naming `pthread_create` if the thread
    ///   cannot be started.
    static func start(_ body: @escaping @Sendable () -> Void) throws(TimerError) {
        let context = Unmanaged.passRetained(Body(body))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            },
            context.toOpaque())
        guard result == 0 else {
            context.release()
            throw .core(CoreError(code: result, function: "pthread_create"))
        }
        pthread_detach(thread)
    }
}

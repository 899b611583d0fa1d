#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs loops on threads of their own (``TimerLoop/startThread(mode:)``, and
/// the loop behind the clocks' sleeps).
///
/// The thread makes the loop its current one and runs it. When the run
/// returns an error, nothing else would ever see it: the thread records it
/// on the loop (``TimerLoop/failure``), which ends every sleep and tick
/// waiting there with that error instead of leaving them hanging, and goes
/// on running the loop's jobs until ``TimerLoop/stop()``, so that actors on
/// the loop hear of it.
enum LoopThread {
    private final class Body: Sendable {
        let loop: TimerLoop
        let run: @Sendable (TimerLoop) -> Int32
        init(_ loop: TimerLoop, _ run: @escaping @Sendable (TimerLoop) -> Int32) {
            self.loop = loop
            self.run = run
        }

        func main() {
            TimerLoop.setCurrent(loop)
            let result = run(loop)
            do {
                _ = try TimerError.check(result, "tk_loop_run")
            } catch {
                loop.fail(error)
                loop.serveJobsAfterFailure()
            }
        }
    }

    /// Starts a detached thread that runs `loop` with `run` (a call of
    /// `tk_loop_run`, or in tests a stand-in that fails on purpose).
    ///
    /// - Throws: ``TimerError/system(_:)`` naming `pthread_create` if the
    ///   thread cannot be started.
    static func start(_ loop: TimerLoop, run: @escaping @Sendable (TimerLoop) -> Int32)
        throws(TimerError)
    {
        let context = Unmanaged.passRetained(Body(loop, run))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().main()
                return nil
            },
            context.toOpaque())
        guard result == 0 else {
            context.release()
            _ = try TimerError.check(-result, "pthread_create")
            return
        }
        SystemError.expectSuccess(-pthread_detach(thread), "pthread_detach")
    }
}

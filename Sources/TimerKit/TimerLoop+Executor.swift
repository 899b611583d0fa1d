import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A loop is a Swift executor: an actor can run on it, and a task can prefer
/// it, as they can run on a SwiftNIO event loop.
///
/// ```swift
/// actor Ticker {
///     let loop: TimerLoop
///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
///     init(loop: TimerLoop) { self.loop = loop }
///
///     func tick() async throws {
///         // Runs on the loop's thread; the sleep's timer is on the same loop,
///         // so it resumes there too: no thread hop.
///         try await MonotonicClock().sleep(for: .milliseconds(10))
///     }
/// }
/// ```
///
/// Jobs are queued, and the loop is woken through its eventfd
/// (`tk_loop_wakeup`); the next pass of a run, in whatever mode, runs them
/// in the order they came (`tk_loop_set_wakeup_handler`). So the loop must be
/// run, by ``startThread(mode:)`` or by a thread that calls ``run(mode:until:)``:
/// the jobs of a loop that nobody runs wait. On a manual loop they run in the
/// passes of its runs (not of ``advance(by:mode:)``).
///
/// While a job runs on the loop's thread, sleeps on ``MonotonicClock``,
/// ``BootClock`` and ``WallClock`` schedule their timers on this loop rather
/// than the shared one, so they resume on this thread without a hop; timers
/// the job schedules on the loop fire on it too. A manual loop is the
/// exception: its time is not the clocks', so their sleeps go to the shared
/// loop and end in real time (sleep on a ``ManualClock``, or with the loop's
/// ``sleep(until:tolerance:)``, to follow the manual time).
extension TimerLoop: SerialExecutor, TaskExecutor {
    /// Queues `job` to run on the loop's thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let local = isRunningOnCurrentThread
        jobs.withLock { queue in
            queue.pending.append(job)
            if !local { queue.fromOtherThreads &+= 1 }
        }
        SystemError.expectSuccess(tk_loop_wakeup(handle), "tk_loop_wakeup")
        // Read after the append: a thread whose run failed before it took
        // the queue's batch finds the job there; one that took it earlier
        // sees this post.
        if hasFailed { jobSignal.post() }
    }

    /// How many jobs were queued from threads other than the one running the
    /// loop: each is a thread hop (the loop woken through its eventfd).
    /// Jobs queued by the loop's own thread, such as a task resumed by a
    /// timer or sleep of the same loop, are not.
    public var jobsFromOtherThreads: Int {
        jobs.withLock { $0.fromOtherThreads }
    }

    /// This loop as a serial executor, for an actor's `unownedExecutor`.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// This loop as a task executor, for `Task(executorPreference:)`.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Stops the program unless the calling thread is running this loop,
    /// which is where an actor on the loop is isolated.
    public func checkIsolated() {
        precondition(
            isRunningOnCurrentThread,
            "not on the thread running this TimerLoop, which the actor's isolation requires")
    }

    /// Whether the calling thread is running this loop (in a run, an
    /// advance, or one of their callbacks and jobs). Once the run of the
    /// loop's own thread has failed, that thread goes on running the loop's
    /// jobs, and only a job is on the loop: another thread that runs the
    /// loop meanwhile is not, outside the jobs it runs (its callbacks could
    /// otherwise overlap a job of the same actor).
    ///
    /// The corresponding C function is `tk_loop_runs_on_this_thread`.
    public var isRunningOnCurrentThread: Bool {
        if hasFailed { return TimerLoop.executing === self }
        return tk_loop_runs_on_this_thread(handle) == 1
    }

    /// The loop whose jobs the calling thread is running, if any: the
    /// executor that a wait ended from that loop's thread should prefer. A
    /// continuation resumes the task on its preferred executor, by default
    /// the global one, which would then hop back to the loop; a task that
    /// prefers the loop resumes onto the loop itself.
    package static var executing: TimerLoop? {
        guard let pointer = pthread_getspecific(executingLoopKey) else { return nil }
        return Unmanaged<TimerLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// ``executing`` if it is a real (not manual) loop: the one whose timers
    /// a clock's sleep may use (a manual loop's time is not the clock's).
    package static var executingRealLoop: TimerLoop? {
        guard let loop = executing, !loop.isManual else { return nil }
        return loop
    }

    /// Makes the loop's runs call ``runJobs()`` when woken.
    func installJobRunner() {
        let result = tk_loop_set_wakeup_handler(handle, { _, context in
            Unmanaged<TimerLoop>.fromOpaque(context!).takeUnretainedValue().runJobs()
        }, Unmanaged.passUnretained(self).toOpaque())
        SystemError.expectSuccess(result, "tk_loop_set_wakeup_handler")
    }

    /// What the loop's own thread does once its run failed (see
    /// ``startThread(mode:)``): nothing can wait on the loop's descriptors
    /// any more, but actors and tasks on the loop must still run, if only to
    /// hear that their sleeps failed. So the thread goes on running the
    /// loop's jobs, woken by each enqueue, until a stop that no run takes
    /// (``stop()`` also wakes it): one that came as the run failed counts,
    /// and one that ends a run nested in a job does not.
    func serveJobsAfterFailure() {
        while true {
            runJobs()
            if tk_loop_take_stop(handle) == 1 { return }
            jobSignal.wait()
        }
    }

    /// Runs the queued jobs, on the loop's thread. Jobs queued meanwhile ask
    /// for another pass (their enqueue woke the loop), so none waits long.
    ///
    /// A job that runs the loop nested (as a modal loop does) does not run
    /// the jobs queued meanwhile inside itself: that would run another job
    /// of the same actor in the middle of this one. They wait until it
    /// returns.
    private func runJobs() {
        var batch = jobs.withLock { queue -> [UnownedJob] in
            if queue.running { return [] }
            var taken: [UnownedJob] = []
            swap(&taken, &queue.pending)
            // The spare array, empty but with room, takes the next jobs.
            swap(&queue.pending, &queue.spare)
            queue.running = !taken.isEmpty
            return taken
        }
        if batch.isEmpty { return }
        let outer = pthread_getspecific(executingLoopKey)
        pthread_setspecific(executingLoopKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(executingLoopKey, outer) }
        let serial = asUnownedSerialExecutor()
        let task = asUnownedTaskExecutor()
        for job in batch {
            job.runSynchronously(isolatedTo: serial, taskExecutor: task)
        }
        // Hand the emptied array back as the spare, keeping its storage.
        batch.removeAll(keepingCapacity: true)
        let waiting = jobs.withLock { queue in
            if queue.spare.capacity < batch.capacity { swap(&queue.spare, &batch) }
            queue.running = false
            return !queue.pending.isEmpty
        }
        // Jobs a nested run left waiting: another pass runs them.
        if waiting { SystemError.expectSuccess(tk_loop_wakeup(handle), "tk_loop_wakeup") }
    }
}

/// A loop's queued jobs: `pending` fills while the batch taken before runs;
/// `spare` is always empty, the storage of a run batch kept for the next
/// `pending`, so a steady flow of jobs does not allocate.
struct JobQueue {
    var pending: [UnownedJob] = []
    var spare: [UnownedJob] = []
    var fromOtherThreads = 0
    /// Whether the loop's thread is running a batch (a nested run must not
    /// start another).
    var running = false
}

/// Wakes the thread that runs a failed loop's jobs: a POSIX semaphore, in
/// memory of its own (it must not move). Unchecked: the semaphore is made for
/// use from any thread, and the pointer never changes.
final class JobSignal: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>

    init() {
        semaphore = .allocate(capacity: 1)
        SystemError.expectSuccess(-(sem_init(semaphore, 0, 0) == 0 ? 0 : errno), "sem_init")
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Wakes the waiter, or the next wait. (Past the semaphore's largest
    /// count, EOVERFLOW, a wait returns at once all the same.)
    func post() {
        guard sem_post(semaphore) != 0 else { return }
        let error = errno
        if error != EOVERFLOW { SystemError.expectSuccess(-error, "sem_post") }
    }

    /// Waits for a post (resumed after a signal).
    func wait() {
        while sem_wait(semaphore) != 0 {
            let error = errno
            if error != EINTR { SystemError.expectSuccess(-error, "sem_wait") }
        }
    }
}

/// The key of the loop whose jobs the calling thread is running.
private let executingLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let result = pthread_key_create(&key, nil)
    SystemError.expectSuccess(-result, "pthread_key_create")
    return key
}()

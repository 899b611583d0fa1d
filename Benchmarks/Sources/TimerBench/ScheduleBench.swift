import CBenchSupport
import CTimerCore
import Dispatch
import Foundation
import Synchronization
import TimerKit

// Part 1: the cost of scheduling and invalidating one-shot timers with many
// pending, and the memory and allocations each pending timer takes, for a
// TimerKit LoopTimer on a TimerLoop, the C core called directly, a Foundation
// Timer on a RunLoop, a DispatchSourceTimer and a Task in Task.sleep
// (Benchmarks/ adds SwiftNIO). No loop runs: timers are only scheduled and
// invalidated (Dispatch registers its sources on a queue of its own, so its
// batches end by waiting for that queue).

/// One way of scheduling timers, holding `pending` of them.
///
/// The benchmark calls every method from one thread; a side whose timers
/// live on another thread (an event loop, a queue) hands the work over and
/// waits for it, so the hand-over is part of its cost.
public protocol ScheduleSide: AnyObject {
    var name: String { get }
    /// Schedules one pending timer per delay.
    func fill(_ delays: [Int64]) throws
    /// For each delay: schedule a timer, then invalidate it.
    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws
    /// For each delay: schedule a new timer, invalidate the pending timer at
    /// the victim index and put the new one in its place.
    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws
    /// Waits for work the side does asynchronously (part of the cost).
    func settle()
    /// Invalidates every pending timer.
    func drain()
}

/// How to make a side, and up to which number of pending timers it is
/// measured (sides that cancel in O(n) would take minutes beyond it).
public struct ScheduleSideMaker {
    public var name: String
    /// The largest number of pending timers measured, or nil for no cap.
    public var maxPending: Int?
    /// Why there is a cap, for the table.
    public var capReason: String
    public var make: () throws -> any ScheduleSide

    public init(
        name: String, maxPending: Int? = nil, capReason: String = "",
        make: @escaping () throws -> any ScheduleSide
    ) {
        self.name = name
        self.maxPending = maxPending
        self.capReason = capReason
        self.make = make
    }

    /// TimerKit and the peers that need no package: the C core (what the
    /// facade is built on), Foundation, Dispatch and Task.sleep.
    public static func standard(quick: Bool) -> [ScheduleSideMaker] {
        [
            ScheduleSideMaker(name: "TimerKit LoopTimer") { try TimerKitScheduleSide() },
            ScheduleSideMaker(name: CoreScheduleSide.sideName) { try CoreScheduleSide() },
            ScheduleSideMaker(
                name: "Foundation Timer+RunLoop", maxPending: quick ? 10_000 : 100_000,
                capReason: "CFRunLoop keeps timers in a sorted array: O(n) insert and O(n) search per invalidate"
            ) { FoundationScheduleSide() },
            ScheduleSideMaker(name: "DispatchSourceTimer") { DispatchScheduleSide() },
            ScheduleSideMaker(name: "Task.sleep in a Task") { TaskSleepScheduleSide() },
        ]
    }
}

final class TimerKitScheduleSide: ScheduleSide {
    let name = "TimerKit LoopTimer"
    private let loop: TimerLoop
    private var pending: [LoopTimer<MonotonicClock>] = []

    init() throws { loop = try TimerLoop() }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays {
            pending.append(try loop.schedule(after: .nanoseconds(delay)) { _, _ in })
        }
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays {
            let timer = try loop.schedule(after: .nanoseconds(delay)) { _, _ in }
            timer.invalidate()
        }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let timer = try loop.schedule(after: .nanoseconds(delays[i])) { _, _ in }
            pending[victims[i]].invalidate()
            pending[victims[i]] = timer
        }
    }

    func settle() {}

    func drain() {
        for timer in pending { timer.invalidate() }
        pending = []
        let left = loop.statistics.pending
        if left != 0 { progress("warning: \(left) TimerKit timers still pending after invalidating all") }
    }
}

/// TimerKit's timers with no object each (`TimerCallbacks`): one handler
/// for all, each timer a value naming it in the C table.
final class TimerKitCallbacksScheduleSide: ScheduleSide {
    static let sideName = "TimerKit TimerCallbacks"
    let name = TimerKitCallbacksScheduleSide.sideName

    /// Does nothing when a timer fires (no loop runs in this benchmark).
    private final class Handler: TimerCallbackHandler {
        func timerFired(_ timer: CallbackTimer, missed: UInt64) {}
    }

    private let loop: TimerLoop
    private let callbacks: TimerCallbacks<Handler>
    private var pending: [CallbackTimer] = []

    init() throws {
        loop = try TimerLoop()
        callbacks = loop.callbacks(Handler())
    }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays { pending.append(try callbacks.schedule(after: .nanoseconds(delay))) }
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays { callbacks.cancel(try callbacks.schedule(after: .nanoseconds(delay))) }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let timer = try callbacks.schedule(after: .nanoseconds(delays[i]))
            callbacks.cancel(pending[victims[i]])
            pending[victims[i]] = timer
        }
    }

    func settle() {}

    func drain() {
        for timer in pending { callbacks.cancel(timer) }
        pending = []
        let left = loop.statistics.pending
        if left != 0 { progress("warning: \(left) TimerCallbacks timers still pending after cancelling all") }
    }
}

/// A C loop for a side that calls the core directly.
func makeCoreLoop() throws -> OpaquePointer {
    var loop: OpaquePointer?
    let result = tk_loop_create(&loop)
    guard result == 0, let loop else { throw SideFailure("tk_loop_create returned \(result)") }
    return loop
}

/// Schedules a one-shot timer `delay` from now with a C function as the
/// callback and `context` as its context, writing its handle to `id`.
@inline(__always)
func scheduleCoreTimer(
    _ loop: OpaquePointer, _ delay: Int64, _ id: UnsafeMutablePointer<tk_timer_id>,
    context: UnsafeMutableRawPointer? = nil
) throws {
    var spec = tk_timer_spec(
        clock: TK_CLOCK_MONOTONIC, delay_ns: delay, deadline_ns: 0, interval_ns: 0, leeway_ns: 0, modes: 1,
        flags: 0)
    let result = tk_loop_schedule(loop, &spec, { _, _, _, _ in }, context, id)
    guard result == 0 else { throw SideFailure("tk_loop_schedule returned \(result)") }
}

/// The C core called directly (a C function as the callback): what the
/// Swift facade adds is the difference to TimerKit's row.
final class CoreScheduleSide: ScheduleSide {
    static let sideName = "C core tk_loop_schedule/cancel"
    let name = CoreScheduleSide.sideName
    private let loop: OpaquePointer
    private var pending: [tk_timer_id] = []

    init() throws { loop = try makeCoreLoop() }

    deinit { _ = tk_loop_destroy(loop) }

    @inline(__always)
    private func schedule(_ delay: Int64) throws -> tk_timer_id {
        var id: tk_timer_id = 0
        try scheduleCoreTimer(loop, delay, &id)
        return id
    }

    @inline(__always)
    private func cancel(_ id: tk_timer_id) throws {
        let result = tk_loop_cancel(loop, id)
        guard result == 0 else { throw SideFailure("tk_loop_cancel returned \(result)") }
    }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays { pending.append(try schedule(delay)) }
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays { try cancel(try schedule(delay)) }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let id = try schedule(delays[i])
            try cancel(pending[victims[i]])
            pending[victims[i]] = id
        }
    }

    func settle() {}

    func drain() {
        for id in pending { _ = tk_loop_cancel(loop, id) }
        pending = []
    }
}

/// The C core with each handle kept in a block of its own, as any API with
/// one object per timer keeps it: allocated at schedule, read back to cancel,
/// freed after. The block is as large as a `LoopTimer` (136 bytes), with the
/// handle where a `LoopTimer` keeps its own. With many timers pending, the
/// block being read back is rarely in the cache: a cost of one object per
/// timer, not of Swift (see `TimerCost`).
final class CoreBoxedScheduleSide: ScheduleSide {
    static let sideName = "C core + 136 B box per timer"
    static let boxBytes = 136
    let name = CoreBoxedScheduleSide.sideName
    private let loop: OpaquePointer
    private var pending: [UnsafeMutablePointer<tk_timer_id>] = []

    init() throws { loop = try makeCoreLoop() }

    deinit {
        for box in pending { free(box) }
        _ = tk_loop_destroy(loop)
    }

    @inline(__always)
    private func schedule(_ delay: Int64) throws -> UnsafeMutablePointer<tk_timer_id> {
        guard let raw = malloc(Self.boxBytes) else { throw SideFailure("malloc failed") }
        let box = raw.bindMemory(to: tk_timer_id.self, capacity: Self.boxBytes / 8)
        do {
            // At byte 80, where a LoopTimer keeps its handle.
            try scheduleCoreTimer(loop, delay, box + 10)
        } catch {
            free(box)
            throw error
        }
        return box
    }

    /// Cancels the timer and frees its block. If the cancel fails, the block
    /// is kept: one in `pending` is freed by `drain` or `deinit`.
    @inline(__always)
    private func cancel(_ box: UnsafeMutablePointer<tk_timer_id>) throws {
        let result = tk_loop_cancel(loop, box[10])
        guard result == 0 else { throw SideFailure("tk_loop_cancel returned \(result)") }
        free(box)
    }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays { pending.append(try schedule(delay)) }
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays {
            let box = try schedule(delay)
            do {
                try cancel(box)
            } catch {
                free(box)  // its timer is not in `pending`: the loop's destruction ends it
                throw error
            }
        }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let box = try schedule(delays[i])
            let victim = pending[victims[i]]
            // The new block takes the victim's place first, so that whatever
            // fails, every block is in `pending` or freed.
            pending[victims[i]] = box
            do {
                try cancel(victim)
            } catch {
                free(victim)
                throw error
            }
        }
    }

    func settle() {}

    func drain() {
        for box in pending {
            _ = tk_loop_cancel(loop, box[10])
            free(box)
        }
        pending = []
    }
}

/// The C core with each handle in a Swift object of its own, as large as a
/// `LoopTimer` (136 bytes, the handle where a `LoopTimer` keeps its own),
/// which the loop keeps alive while its timer is scheduled, as it keeps a
/// `LoopTimer`: a reference passed as the timer's context at schedule and
/// released by the loop's release handler. The object is read back to cancel
/// and freed when the side lets go of it. This is what any Swift API that
/// keeps a handle in one class instance per timer pays at the least. A
/// `LoopTimer` keeps the core's record of its timer in itself instead
/// (`tk_loop_schedule_record`) and cancels by that record
/// (`tk_loop_cancel_record`), so a cancel reads the object and not the
/// table's record for the timer: with many timers pending, a cache miss
/// this side takes and a `LoopTimer` does not (see `TimerCost`).
final class CoreObjectScheduleSide: ScheduleSide {
    static let sideName = "C core + Swift object per timer"
    let name = CoreObjectScheduleSide.sideName
    private let loop: OpaquePointer
    private var pending: [TimerObject] = []

    /// 16 bytes of object header, then 120 of fields, the handle at byte 80.
    final class TimerObject {
        var before: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0)
        /// Written by `tk_loop_schedule` through a pointer, once.
        @exclusivity(unchecked) var id: tk_timer_id = 0
        var after: (Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0)
    }

    init() throws {
        loop = try makeCoreLoop()
        let result = tk_loop_set_release_handler(loop) { _, context in
            Unmanaged<TimerObject>.fromOpaque(context!).release()
        }
        guard result == 0 else {
            _ = tk_loop_destroy(loop)
            throw SideFailure("tk_loop_set_release_handler returned \(result)")
        }
    }

    /// Releases the loop's reference to every object still scheduled.
    deinit { _ = tk_loop_destroy(loop) }

    @inline(__always)
    private func schedule(_ delay: Int64) throws -> TimerObject {
        let object = TimerObject()
        // The loop's reference, released by the release handler.
        let context = Unmanaged.passRetained(object)
        do {
            try withUnsafeMutablePointer(to: &object.id) { id in
                try scheduleCoreTimer(loop, delay, id, context: context.toOpaque())
            }
        } catch {
            context.release()
            throw error
        }
        return object
    }

    @inline(__always)
    private func cancel(_ object: TimerObject) throws {
        let result = tk_loop_cancel(loop, object.id)
        guard result == 0 else { throw SideFailure("tk_loop_cancel returned \(result)") }
    }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays { pending.append(try schedule(delay)) }
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays { try cancel(try schedule(delay)) }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let object = try schedule(delays[i])
            try cancel(pending[victims[i]])
            pending[victims[i]] = object
        }
    }

    func settle() {}

    func drain() {
        for object in pending { _ = tk_loop_cancel(loop, object.id) }
        pending = []
    }
}

final class FoundationScheduleSide: ScheduleSide {
    let name = "Foundation Timer+RunLoop"
    private let runLoop = RunLoop.current
    private var pending: [Timer] = []

    // Timer(fire:interval:repeats:block:) with an explicit date: the
    // timeInterval initializer sets the fire date to the creation time on
    // Linux (see the lateness part), which would put every timer in one spot.
    @inline(__always)
    private func make(_ delay: Int64) -> Timer {
        Timer(fire: Date(timeIntervalSinceNow: Double(delay) / 1e9), interval: 0, repeats: false) { _ in }
    }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays {
            let timer = make(delay)
            runLoop.add(timer, forMode: .default)
            pending.append(timer)
        }
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays {
            let timer = make(delay)
            runLoop.add(timer, forMode: .default)
            timer.invalidate()
        }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let timer = make(delays[i])
            runLoop.add(timer, forMode: .default)
            pending[victims[i]].invalidate()
            pending[victims[i]] = timer
        }
    }

    func settle() {}

    /// In fire-date order: the run loop finds each timer at the front of its
    /// sorted array, where a random order would search half of it each time.
    func drain() {
        for timer in pending.sorted(by: { $0.fireDate < $1.fireDate }) { timer.invalidate() }
        pending = []
    }
}

final class DispatchScheduleSide: ScheduleSide {
    let name = "DispatchSourceTimer"
    private let queue = DispatchQueue(label: "timerkit.bench.sources")
    private var pending: [DispatchSourceTimer] = []

    @inline(__always)
    private func make(_ delay: Int64) -> DispatchSourceTimer {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .nanoseconds(0))
        source.setEventHandler {}
        source.resume()
        return source
    }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays { pending.append(make(delay)) }
        settle()
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays { make(delay).cancel() }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let source = make(delays[i])
            pending[victims[i]].cancel()
            pending[victims[i]] = source
        }
    }

    /// Registration and cancellation are finished on the sources' queue.
    func settle() { queue.sync {} }

    func drain() {
        for source in pending { source.cancel() }
        pending = []
        settle()
    }
}

/// Swift concurrency's delayed action: a Task that sleeps, cancelled with
/// Task.cancel(). A task starts, and a cancelled one ends, on the global
/// executor's threads after the call that made or cancelled it returns;
/// `settle` waits for that work, so it is part of the side's cost (and no
/// longer running when another side is measured).
final class TaskSleepScheduleSide: ScheduleSide {
    let name = "Task.sleep in a Task"
    private let counts = TaskProgress()
    private var pending: [Task<Void, Never>] = []
    private var created = 0
    private var cancelled = 0

    @inline(__always)
    private func make(_ delay: Int64) -> Task<Void, Never> {
        created += 1
        let counts = self.counts
        return Task.detached {
            counts.started.add(1, ordering: .relaxed)
            try? await Task.sleep(for: .nanoseconds(delay))
            if Task.isCancelled { counts.ended.add(1, ordering: .relaxed) }
        }
    }

    @inline(__always)
    private func cancel(_ task: Task<Void, Never>) {
        task.cancel()
        cancelled += 1
    }

    func fill(_ delays: [Int64]) throws {
        pending.reserveCapacity(delays.count)
        for delay in delays { pending.append(make(delay)) }
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        for delay in delays { cancel(make(delay)) }
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        for i in 0..<delays.count {
            let task = make(delays[i])
            cancel(pending[victims[i]])
            pending[victims[i]] = task
        }
    }

    /// Waits until every task made has started its sleep and every
    /// cancelled one has ended (giving up after a minute, with a warning:
    /// the global executor may be starved by the caller's own thread).
    func settle() {
        let limit = monotonicNanoseconds() + 60_000_000_000
        while counts.started.load(ordering: .relaxed) < created
            || counts.ended.load(ordering: .relaxed) < cancelled
        {
            if monotonicNanoseconds() > limit {
                progress("warning: Task.sleep side: tasks still starting or ending after 60 s")
                return
            }
            usleep(20)
        }
    }

    func drain() {
        for task in pending { cancel(task) }
        pending = []
        settle()
    }
}

/// Counts of tasks that started, and of cancelled ones that ended, written
/// by the tasks.
final class TaskProgress: Sendable {
    let started = Atomic<Int>(0)
    let ended = Atomic<Int>(0)
}

/// One measured operation at one size: medians of the timed repetitions.
struct OpFigure {
    var wallNs = Double.nan
    var cpuNs = Double.nan
    var fastestNs = Double.nan
    var slowestNs = Double.nan
    var opsPerRep = 0
    var reps = 0
    /// Each timed repetition's ns per operation, in the order they ran. The
    /// sides take turns, so rep r of every side ran in the same round, close
    /// in time: their ratio compares like with like.
    var repNs: [Double] = []

    var json: JSON {
        .object([
            ("wall_ns_per_pair", .number(wallNs)), ("cpu_ns_per_pair", .number(cpuNs)),
            ("fastest_rep_ns", .number(fastestNs)), ("slowest_rep_ns", .number(slowestNs)),
            ("pairs_per_rep", .int(Int64(opsPerRep))), ("reps", .int(Int64(reps))),
        ])
    }
}

struct ScheduleRow {
    var side: String
    var pending: Int
    var pair = OpFigure()
    var churn = OpFigure()
    /// Resident memory added by scheduling the pending timers, per timer.
    var bytesPerTimer = Double.nan
    /// Allocations while scheduling the pending timers, per timer.
    var mallocsPerFill = Double.nan
    /// Allocations per schedule+invalidate pair, in the steady state.
    var mallocsPerPair = Double.nan
    /// Why the row was not measured (the side's cap), or nil.
    var skipped: String?
    var failed: String?
}

struct ScheduleConfig {
    var sizes: [Int]
    var reps: Int
    /// Each timed repetition is sized to take about this long.
    var repTargetNs: Int64
    var minDelay: Int64 = 100_000_000_000  // 100 s
    var maxDelay: Int64 = 1_000_000_000_000  // 1000 s
}

enum ScheduleBench {
    private enum Kind { case pair, churn }

    /// Runs every side at every size; repetitions alternate between sides.
    static func run(
        _ config: ScheduleConfig, makers: [ScheduleSideMaker], mallocs: MallocCounter?,
        rng: inout SeededGenerator, failures: inout [String]
    ) -> [ScheduleRow] {
        var rows: [ScheduleRow] = []
        for size in config.sizes {
            var sides: [any ScheduleSide] = []
            var sizeRows: [String: ScheduleRow] = [:]
            for maker in makers {
                let name = maker.name
                var row = ScheduleRow(side: name, pending: size)
                if let cap = maker.maxPending, size > cap {
                    row.skipped = "capped at \(cap) pending: \(maker.capReason)"
                    sizeRows[name] = row
                    continue
                }
                do {
                    let side = try maker.make()
                    progress("schedule: \(name), filling \(size) pending")
                    let delays = (0..<size).map { _ in rng.next(in: config.minDelay, config.maxDelay) }
                    // Freed memory of earlier sides goes back to the system
                    // first, so that this side's pages are counted.
                    _ = tkb_release_free_memory()
                    let rss0 = ResidentMemory.bytes()
                    // Bytes an interposer adds to the allocations still live.
                    var headerBytes = 0
                    if let mallocs {
                        let count = try mallocs.count {
                            try side.fill(delays)
                            side.settle()
                        }
                        row.mallocsPerFill = Double(count.mallocs) / Double(size)
                        headerBytes = mallocs.headerBytes * max(count.mallocs - count.frees, 0)
                    } else {
                        try side.fill(delays)
                        side.settle()
                    }
                    let rss1 = ResidentMemory.bytes()
                    // Below 100k pending the delta is within the allocator's and
                    // the page size's noise: not reported.
                    if let rss0, let rss1, size >= 100_000 {
                        row.bytesPerTimer = Double(rss1 - rss0 - headerBytes) / Double(size)
                    }
                    sides.append(side)
                } catch {
                    row.failed = "\(error)"
                    failures.append("schedule \(name) at \(size): \(error)")
                }
                sizeRows[name] = row
            }

            for kind in [Kind.pair, .churn] {
                progress("schedule: \(size) pending, \(kind == .pair ? "schedule+invalidate pairs" : "churn")")
                // Calibrate each side's batch on an untimed warm-up.
                var batch: [String: Int] = [:]
                for side in sides where sizeRows[side.name]?.failed == nil {
                    do {
                        let probe = 256
                        let ns = try timedBatch(side, kind, probe, size, config, &rng).wall
                        let perOp = max(ns / Double(probe), 1)
                        batch[side.name] = min(max(Int(Double(config.repTargetNs) / perOp), 64), 200_000)
                        if kind == .pair, let mallocs {
                            // Counted on a warm side, outside the timed reps.
                            // The delays are drawn before counting starts.
                            let delays = (0..<probe).map { _ in rng.next(in: config.minDelay, config.maxDelay) }
                            let count = try delays.withUnsafeBufferPointer { d in
                                try mallocs.count {
                                    try side.pairs(d)
                                    side.settle()
                                }
                            }
                            sizeRows[side.name]?.mallocsPerPair = Double(count.mallocs) / Double(probe)
                        }
                    } catch {
                        sizeRows[side.name]?.failed = "\(error)"
                        failures.append("schedule \(side.name) at \(size): \(error)")
                    }
                }
                var wall: [String: [Double]] = [:]
                var cpu: [String: [Double]] = [:]
                for rep in 0..<config.reps {
                    let live = sides.filter { sizeRows[$0.name]?.failed == nil }
                    guard !live.isEmpty else { break }
                    for i in 0..<live.count {
                        let side = live[(i + rep) % live.count]
                        let ops = batch[side.name]!
                        do {
                            let t = try timedBatch(side, kind, ops, size, config, &rng)
                            wall[side.name, default: []].append(t.wall / Double(ops))
                            cpu[side.name, default: []].append(t.cpu / Double(ops))
                        } catch {
                            sizeRows[side.name]?.failed = "\(error)"
                            failures.append("schedule \(side.name) at \(size): \(error)")
                        }
                    }
                }
                for side in sides {
                    guard let w = wall[side.name], let c = cpu[side.name] else { continue }
                    let figure = OpFigure(
                        wallNs: median(w), cpuNs: median(c), fastestNs: w.min()!, slowestNs: w.max()!,
                        opsPerRep: batch[side.name]!, reps: w.count, repNs: w)
                    if kind == .pair { sizeRows[side.name]?.pair = figure } else { sizeRows[side.name]?.churn = figure }
                }
            }
            progress("schedule: \(size) pending, invalidating them all")
            for side in sides { side.drain() }
            for maker in makers { rows.append(sizeRows[maker.name]!) }
        }
        return rows
    }

    /// One batch of `ops` operations; nanoseconds of wall and process CPU time.
    private static func timedBatch(
        _ side: any ScheduleSide, _ kind: Kind, _ ops: Int, _ size: Int, _ config: ScheduleConfig,
        _ rng: inout SeededGenerator
    ) throws -> (wall: Double, cpu: Double) {
        // Drawn before the clock starts.
        let delays = (0..<ops).map { _ in rng.next(in: config.minDelay, config.maxDelay) }
        let victims = kind == .churn ? (0..<ops).map { _ in rng.index(below: size) } : []
        return try delays.withUnsafeBufferPointer { d in
            try victims.withUnsafeBufferPointer { v in
                let cpu0 = processCPUNanoseconds()
                let t0 = monotonicNanoseconds()
                switch kind {
                case .pair: try side.pairs(d)
                case .churn: try side.churn(d, v)
                }
                side.settle()
                let t1 = monotonicNanoseconds()
                let cpu1 = processCPUNanoseconds()
                return (Double(t1 - t0), Double(cpu1 - cpu0))
            }
        }
    }
}

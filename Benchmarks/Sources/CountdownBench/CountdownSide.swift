import Countdowns
import TimerBench
import TimerKit

/// One way of running many countdowns on a TimerLoop, measured side by side
/// by ``CountdownBench``.
///
/// A side is used from one thread: the thread that runs or advances its loop,
/// where its callbacks also run.
protocol CountdownSide: AnyObject {
    /// The side's name in the report.
    static var name: String { get }

    /// A side on `loop`, with room for `capacity` countdowns.
    init(loop: TimerLoop, capacity: Int) throws

    /// Adds a countdown ending `remaining` nanoseconds from now (a whole
    /// number of seconds); an observed one has a display that the side keeps
    /// up to date. Returns its handle (below `capacity`, reused after removal).
    func add(remaining: Int64, observed: Bool) throws -> Int

    /// Removes a countdown that has not ended.
    func remove(_ handle: Int)

    /// What an observed countdown's display shows now, in seconds.
    func displayed(_ handle: Int) -> Int64

    /// Adds an unobserved countdown for each of `durations` (nanoseconds),
    /// keeping the side's own handles in an array, then removes them in
    /// `order` (indices into `durations`). Returns the nanoseconds the adds
    /// and the removes took. Every side keeps its handles the same way, so
    /// the figures compare the approaches, not the bookkeeping around them.
    func timeAddsAndRemoves(_ durations: [Int64], order: [Int]) throws -> (adds: Int64, removes: Int64)

    /// Stops the side's timers.
    func stop()

    /// What it recorded: displays and ends.
    var record: SideRecord { get }
}

/// What the sides record as they run: each display's value and each end.
///
/// The loop's callbacks run on the one thread that drives the side, which
/// is what makes the unsynchronized storage safe here.
final class SideRecord: @unchecked Sendable {
    /// The display of each handle, in seconds.
    var displays: [Int64]
    /// The true end of each handle, boot-clock nanoseconds.
    var ends: [Int64]
    /// Each end reported, by handle: how late (negative: early), nanoseconds.
    var endLateness: [Int: Int64] = [:]
    /// Ends reported a second time for the same handle.
    var repeatedEnds = 0
    let loop: TimerLoop

    init(loop: TimerLoop, capacity: Int) {
        self.loop = loop
        displays = Array(repeating: 0, count: capacity)
        ends = Array(repeating: 0, count: capacity)
    }

    func ended(_ handle: Int) {
        if endLateness.updateValue(loop.now(.boot).offset.nanoseconds - ends[handle], forKey: handle) != nil {
            repeatedEnds += 1
        }
    }
}

/// Handles from 0 up, reused after removal (a free list).
struct HandlePool {
    private var free: [Int] = []
    private var next = 0

    mutating func take() -> Int {
        if let handle = free.popLast() { return handle }
        next += 1
        return next - 1
    }

    mutating func give(_ handle: Int) { free.append(handle) }
}

// MARK: - CountdownCenter

/// TimerKit's ``CountdownCenter``: one timer for every end and tick; an
/// observed countdown's display changes when its rounded remaining time
/// does, computed from the clock.
final class CenterSide: CountdownSide {
    static var name: String { "CountdownCenter" }

    let center: CountdownCenter
    let record: SideRecord
    /// Each handle's countdown, and its observation if it has one.
    private var entries: [(countdown: Countdown, observation: CountdownObservation?)?]
    private var pool = HandlePool()
    private let lookup = HandleLookup()

    /// The end handler's map from countdown to handle, kept only for the
    /// countdowns whose ends are measured: the observed ones.
    private final class HandleLookup: @unchecked Sendable {
        var handles: [Countdown: Int] = [:]
    }

    init(loop: TimerLoop, capacity: Int) throws {
        center = try CountdownCenter(loop: loop)
        record = SideRecord(loop: loop, capacity: capacity)
        entries = Array(repeating: nil, count: capacity)
        let record = record
        let lookup = lookup
        center.onEnd { end in
            if let handle = lookup.handles[end.countdown] { record.ended(handle) }
        }
    }

    func add(remaining: Int64, observed: Bool) throws -> Int {
        let handle = pool.take()
        let countdown = center.add(remaining: .nanoseconds(remaining))
        var observation: CountdownObservation?
        if observed {
            record.ends[handle] = center.loop.now(.boot).offset.nanoseconds + remaining
            lookup.handles[countdown] = handle
            let record = record
            observation = try center.observe(countdown) { event in
                if case .tick(let tick) = event { record.displays[handle] = tick.value }
            }
            record.displays[handle] = (remaining + 999_999_999) / 1_000_000_000
        }
        entries[handle] = (countdown, observation)
        return handle
    }

    func remove(_ handle: Int) {
        guard let entry = entries[handle] else { return }
        center.remove(entry.countdown)
        if entry.observation != nil { lookup.handles[entry.countdown] = nil }
        entries[handle] = nil
        pool.give(handle)
    }

    func displayed(_ handle: Int) -> Int64 { record.displays[handle] }

    func timeAddsAndRemoves(_ durations: [Int64], order: [Int]) throws -> (adds: Int64, removes: Int64) {
        var countdowns: [Countdown] = []
        countdowns.reserveCapacity(durations.count)
        var start = monotonicNanoseconds()
        for duration in durations { countdowns.append(center.add(remaining: .nanoseconds(duration))) }
        let adds = monotonicNanoseconds() - start
        start = monotonicNanoseconds()
        for index in order { center.remove(countdowns[index]) }
        return (adds, monotonicNanoseconds() - start)
    }

    func stop() {
        entries = []
        center.onEnd(nil)
    }
}

// MARK: - One LoopTimer per countdown

/// One repeating one-second `LoopTimer` per countdown, as with a timer per
/// cell: each fire takes one second off the countdown's count (the fires
/// are counted, as the per-cell timers of the iOS libraries count them),
/// and the countdown ends when the count reaches zero.
final class PerCountdownTimerSide: CountdownSide {
    static var name: String { "LoopTimer per countdown" }

    let loop: TimerLoop
    let record: SideRecord
    private var timers: [LoopTimer<BootClock>?]
    private var pool = HandlePool()
    private let counts: Counts

    /// Each countdown's count of seconds left (changed by its timer).
    private final class Counts: @unchecked Sendable {
        var left: [Int64]
        var observed: [Bool]
        init(capacity: Int) {
            left = Array(repeating: 0, count: capacity)
            observed = Array(repeating: false, count: capacity)
        }
    }

    init(loop: TimerLoop, capacity: Int) throws {
        self.loop = loop
        record = SideRecord(loop: loop, capacity: capacity)
        timers = Array(repeating: nil, count: capacity)
        counts = Counts(capacity: capacity)
    }

    func add(remaining: Int64, observed: Bool) throws -> Int {
        let handle = pool.take()
        let seconds = (remaining + 999_999_999) / 1_000_000_000
        counts.left[handle] = seconds
        counts.observed[handle] = observed
        record.displays[handle] = seconds
        record.ends[handle] = loop.now(.boot).offset.nanoseconds + remaining
        let counts = counts
        let record = record
        timers[handle] = try loop.schedule(
            after: .seconds(1), repeating: .seconds(1), clock: .boot, in: .common
        ) { timer, _ in
            counts.left[handle] -= 1
            if counts.observed[handle] {
                record.displays[handle] = counts.left[handle]
                if counts.left[handle] == 0 { record.ended(handle) }
            }
            if counts.left[handle] == 0 { timer.invalidate() }
        }
        return handle
    }

    func remove(_ handle: Int) {
        timers[handle]?.invalidate()
        timers[handle] = nil
        pool.give(handle)
    }

    func displayed(_ handle: Int) -> Int64 { record.displays[handle] }

    func timeAddsAndRemoves(_ durations: [Int64], order: [Int]) throws -> (adds: Int64, removes: Int64) {
        var timers: [LoopTimer<BootClock>] = []
        timers.reserveCapacity(durations.count)
        let counts = Counts(capacity: durations.count)
        var start = monotonicNanoseconds()
        for (index, duration) in durations.enumerated() {
            counts.left[index] = (duration + 999_999_999) / 1_000_000_000
            timers.append(
                try loop.schedule(after: .seconds(1), repeating: .seconds(1), clock: .boot, in: .common) {
                    timer, _ in
                    counts.left[index] -= 1
                    if counts.left[index] == 0 { timer.invalidate() }
                })
        }
        let adds = monotonicNanoseconds() - start
        start = monotonicNanoseconds()
        for index in order { timers[index].invalidate() }
        return (adds, monotonicNanoseconds() - start)
    }

    func stop() {
        for timer in timers { timer?.invalidate() }
        timers = []
    }
}

// MARK: - One ticker walking every countdown

/// The OYCountDownManager approach: one repeating one-second timer whose
/// every fire walks all the countdowns, takes one second off each count
/// (fires counted, not time), updates the observed ones' displays and ends
/// those that reach zero.
final class TickWalkerSide: CountdownSide {
    static var name: String { "one ticker walking all" }

    let loop: TimerLoop
    let record: SideRecord
    private let items: Items
    private var pool = HandlePool()
    private var ticker: LoopTimer<BootClock>?

    /// The countdowns, packed: position i holds handle `handles[i]`.
    private final class Items: @unchecked Sendable {
        var left: [Int64] = []
        var observed: [Bool] = []
        var handles: [Int] = []
        /// Each handle's position, or -1.
        var positions: [Int]

        /// The packed arrays grow as countdowns come (their growth is the
        /// approach's memory); the handle map is the harness's.
        init(capacity: Int) {
            positions = Array(repeating: -1, count: capacity)
        }

        func append(handle: Int, seconds: Int64, observed isObserved: Bool) {
            positions[handle] = left.count
            left.append(seconds)
            observed.append(isObserved)
            handles.append(handle)
        }

        /// Removes position `index` by moving the last item into it.
        func remove(at index: Int) {
            let last = left.count - 1
            positions[handles[index]] = -1
            if index != last {
                left[index] = left[last]
                observed[index] = observed[last]
                handles[index] = handles[last]
                positions[handles[index]] = index
            }
            left.removeLast()
            observed.removeLast()
            handles.removeLast()
        }
    }

    init(loop: TimerLoop, capacity: Int) throws {
        self.loop = loop
        record = SideRecord(loop: loop, capacity: capacity)
        items = Items(capacity: capacity)
        let items = items
        let record = record
        ticker = try loop.schedule(after: .seconds(1), repeating: .seconds(1), clock: .boot, in: .common) {
            _, _ in
            var index = 0
            while index < items.left.count {
                items.left[index] -= 1
                if items.observed[index] { record.displays[items.handles[index]] = items.left[index] }
                if items.left[index] <= 0 {
                    if items.observed[index] { record.ended(items.handles[index]) }
                    items.remove(at: index)  // the last item moves here: look at it next
                } else {
                    index += 1
                }
            }
        }
    }

    func add(remaining: Int64, observed: Bool) throws -> Int {
        let handle = pool.take()
        let seconds = (remaining + 999_999_999) / 1_000_000_000
        items.append(handle: handle, seconds: seconds, observed: observed)
        record.displays[handle] = seconds
        record.ends[handle] = loop.now(.boot).offset.nanoseconds + remaining
        return handle
    }

    func remove(_ handle: Int) {
        let index = items.positions[handle]
        if index >= 0 { items.remove(at: index) }
        pool.give(handle)
    }

    func displayed(_ handle: Int) -> Int64 { record.displays[handle] }

    func timeAddsAndRemoves(_ durations: [Int64], order: [Int]) throws -> (adds: Int64, removes: Int64) {
        var handles: [Int] = []
        handles.reserveCapacity(durations.count)
        var start = monotonicNanoseconds()
        for duration in durations {
            let handle = pool.take()
            items.append(handle: handle, seconds: (duration + 999_999_999) / 1_000_000_000, observed: false)
            handles.append(handle)
        }
        let adds = monotonicNanoseconds() - start
        start = monotonicNanoseconds()
        for index in order { remove(handles[index]) }
        return (adds, monotonicNanoseconds() - start)
    }

    func stop() {
        ticker?.invalidate()
        ticker = nil
    }
}

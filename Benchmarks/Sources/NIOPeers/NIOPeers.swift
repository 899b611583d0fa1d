import NIOCore
import NIOPosix
import TimerBench

/// SwiftNIO's event loop as a peer of TimerKit: its scheduled tasks and
/// scheduled callbacks (churn, memory, allocations), a chain of scheduled
/// tasks on a grid (lateness) and NIODeadline.now() (clock reads).
///
/// Every NIO side has an event loop of a one-thread
/// MultiThreadedEventLoopGroup. The benchmark runs each batch of operations
/// on the loop's own thread (scheduling from another thread would take NIO's
/// lock and wake the loop each time), so a batch costs one hand-over.
public enum NIOPeers {
    /// The lateness peer's loop, for the life of the process.
    public static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// The NIO schedule sides. NIO finds a task to cancel by a linear search
    /// of its heap (O(n)), which the 1M run still allows.
    public static func scheduleSides() -> [ScheduleSideMaker] {
        [
            ScheduleSideMaker(name: "NIO scheduleTask") { NIOScheduleSide.scheduleTask() },
            ScheduleSideMaker(name: "NIO scheduleCallback") { NIOScheduleSide.scheduleCallback() },
        ]
    }

    public static func latenessPeer() -> any LatenessPeer {
        NIOLateness(loop: group.next())
    }

    public static let clockReader = ClockReader(name: "NIODeadline.now()") {
        Int64(NIODeadline.now().uptimeNanoseconds)
    }

    /// The standard peers with NIO's added.
    public static func adding(to peers: BenchCommand.Peers) -> BenchCommand.Peers {
        var peers = peers
        peers.schedule += scheduleSides()
        let standard = peers.lateness
        peers.lateness = { try standard() + [latenessPeer()] }
        peers.clocks.append(clockReader)
        return peers
    }
}

/// A buffer handed to the event loop's thread for the length of one batch,
/// which the benchmark thread waits for.
struct LoopBuffer<Element>: @unchecked Sendable {
    let buffer: UnsafeBufferPointer<Element>
}

import MallocInterposerSwift
import TimerBench

extension MallocCounter {
    /// A counter backed by ordo-one's malloc interposer, for a benchmark
    /// program that links it. Counting is on only between `start` and
    /// `stop`; the interposer is in every allocation's path for the whole
    /// run (a forwarding call and a 16-byte header, which the resident
    /// memory figures leave out).
    public static func interposed() -> MallocCounter {
        MallocInterposerSwift.initialize()
        return MallocCounter(
            headerBytes: 16,
            start: {
                MallocInterposerSwift.reset()
                MallocInterposerSwift.hook()
            },
            stop: {
                MallocInterposerSwift.unhook()
                let statistics = MallocInterposerSwift.getStatistics()
                return (statistics.mallocCount, statistics.freeCount)
            })
    }
}

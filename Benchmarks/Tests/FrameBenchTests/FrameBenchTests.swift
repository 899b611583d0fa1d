import Testing

@testable import FrameBench

// The frame benchmark's scoring on made-up callback times (exact), and each
// package-free peer run briefly: it fires, in order, never before its grid.

@Suite("FrameBench")
struct FrameBenchTests {
    @Test("callbacks on the grid: no jitter, no drops")
    func onGrid() {
        let score = FrameScore(FrameRecording(origin: 1000, period: 100, callbacks: [1100, 1200, 1300]))
        #expect(score.frames == 3)
        #expect(score.jitter.max == 0)
        #expect(score.dropped == 0)
        #expect(score.duplicates == 0)
    }

    @Test("late and early callbacks: jitter to the nearest grid point")
    func jitter() {
        let score = FrameScore(FrameRecording(origin: 0, period: 100, callbacks: [110, 195, 330, 349]))
        // 110 -> 100 (10), 195 -> 200 (5), 330 -> 300 (30), 349 -> 300 (49): a duplicate.
        #expect(score.jitter.max == 49)
        #expect(score.jitter.p50 == 10)
        #expect(score.duplicates == 1)
        #expect(score.dropped == 0)
    }

    @Test("skipped grid points are dropped frames; drift shows as jitter, then a drop")
    func drops() {
        let skipped = FrameScore(FrameRecording(origin: 0, period: 100, callbacks: [100, 400, 500]))
        #expect(skipped.dropped == 2)
        // A peer that schedules each frame a period after the last ran, 20 late each time.
        var time: Int64 = 0
        var callbacks: [Int64] = []
        for _ in 0..<6 {
            time += 120
            callbacks.append(time)
        }
        let drifting = FrameScore(FrameRecording(origin: 0, period: 100, callbacks: callbacks))
        // 120, 240, 360, 480, 600, 720 -> slots 1, 2, 4, 5, 6, 7: one drop.
        #expect(drifting.dropped == 1)
        #expect(drifting.jitter.max == 40)
    }

    @Test("negative offsets round down, not toward zero")
    func roundsDown() {
        #expect(floorDivision(-1, 100) == -1)
        #expect(floorDivision(-100, 100) == -1)
        #expect(floorDivision(99, 100) == 0)
    }

    @Test("each peer without a package fires, in order, never before its first grid point",
          arguments: [0, 1, 2, 3])
    func peersFire(_ index: Int) throws {
        let peer: any FramePeer = [FrameTickerPeer(), TaskSleepPeer(), DispatchPeer(), BareTimerfdPeer()][index]
        let recording = try peer.run(rate: 100, seconds: 0.3)
        #expect(!recording.callbacks.isEmpty)
        #expect(recording.callbacks == recording.callbacks.sorted())
        #expect(recording.callbacks.first! >= recording.origin + recording.period)
        #expect(recording.period == 10_000_000)
    }
}

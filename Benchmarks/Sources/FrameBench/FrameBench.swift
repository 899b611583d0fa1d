import TimerBench

/// The frame-rate benchmark: every peer at each rate, one after another in
/// one run, scored the same way (see ``FrameScore``).
public enum FrameBench {
    public struct Config: Sendable {
        public var rates: [Double]
        public var seconds: Double

        public init(rates: [Double], seconds: Double) {
            self.rates = rates
            self.seconds = seconds
        }

        /// The README's run: 60, 120 and 240 Hz, 10 s each.
        public static let standard = Config(rates: [60, 120, 240], seconds: 10)
        /// A smoke run: 1 s each.
        public static let quick = Config(rates: [60, 120, 240], seconds: 1)
    }

    public struct Row: Sendable {
        public var peer: String
        public var rate: Double
        public var expected: Int
        public var score: FrameScore?
        public var failure: String?
    }

    public struct Report: Sendable {
        public var config: Config
        public var rows: [Row]
        /// Allocations per frame, when the program counts them.
        public var allocations: FrameAllocations?

        public var failures: [String] {
            rows.compactMap { row in row.failure.map { "\(row.peer) at \(row.rate) Hz: \($0)" } }
        }
    }

    public static func run(_ config: Config, peers: [any FramePeer]) -> Report {
        var rows: [Row] = []
        for rate in config.rates {
            for peer in peers {
                progress("frame-peers: \(peer.name) at \(fixed(rate, 0)) Hz for \(fixed(config.seconds, 1)) s")
                let expected = Int(config.seconds * rate)
                do {
                    let recording = try peer.run(rate: rate, seconds: config.seconds)
                    let score = FrameScore(recording)
                    let failure = score.frames == 0 ? "no frame came" : nil
                    rows.append(Row(peer: peer.name, rate: rate, expected: expected, score: score, failure: failure))
                } catch {
                    rows.append(Row(peer: peer.name, rate: rate, expected: expected, failure: "\(error)"))
                }
            }
        }
        return Report(config: config, rows: rows)
    }
}

extension FrameBench.Report {
    /// One table per rate: frames, jitter (p50, p99, max, in µs), dropped
    /// frames and duplicates, and each peer's p99 jitter against the
    /// FrameTicker's from the same run.
    public func text(machine: Machine, load: String) -> String {
        var out = "Frame pacing: callbacks against their grid, \(fixed(config.seconds, 1)) s per peer and rate\n"
        out += "\(machine.cpuModel), \(machine.processors) CPUs, Linux \(machine.kernel), load \(load)\n"
        out += "jitter = |callback start - nearest grid point|; dropped = grid points with no callback\n"
        if let allocations {
            out += "allocations per frame (manual loop, \(allocations.frames) frames): FrameTicker + FrameRateMonitor "
                + "\(fixed(allocations.tickerPerFrame, 4)), FrameRateMonitor alone \(fixed(allocations.monitorPerFrame, 4))\n"
        }
        for rate in config.rates {
            out += "\n\(fixed(rate, 0)) Hz\n"
            out += "| peer | frames | jitter p50 µs | p99 µs | max µs | dropped | duplicates | p50 vs floor | p99 vs FrameTicker |\n"
            out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
            let floor = rows.first { $0.rate == rate && $0.peer == "bare timerfd (C floor)" }?.score
            let reference = rows.first { $0.rate == rate && $0.peer == "TimerKit FrameTicker" }?.score
            for row in rows where row.rate == rate {
                guard let score = row.score else {
                    out += "| \(row.peer) | failed: \(row.failure ?? "?") |\n"
                    continue
                }
                let versus = reference.map { ratio(Double(score.jitter.p99), Double($0.jitter.p99)) } ?? "-"
                let overFloor = floor.map { ratio(Double(score.jitter.p50), Double($0.jitter.p50)) } ?? "-"
                out += "| \(row.peer) | \(score.frames) of \(row.expected) | \(micros(score.jitter.p50)) | "
                    + "\(micros(score.jitter.p99)) | \(micros(score.jitter.max)) | \(score.dropped) | "
                    + "\(score.duplicates) | \(overFloor) | \(versus) |\n"
            }
        }
        return out
    }

    public var json: JSON {
        .object([
            ("seconds", .number(config.seconds)),
            ("allocations_per_frame", allocations.map {
                .object([("ticker_and_monitor", .number($0.tickerPerFrame)), ("monitor", .number($0.monitorPerFrame))])
            } ?? .null),
            ("rows", .array(rows.map { row in
                var members: [(String, JSON)] = [
                    ("peer", .string(row.peer)), ("rate", .number(row.rate)),
                    ("expected", .int(Int64(row.expected))),
                ]
                if let score = row.score {
                    members += [
                        ("frames", .int(Int64(score.frames))), ("jitter", score.jitter.json),
                        ("dropped", .int(score.dropped)), ("duplicates", .int(Int64(score.duplicates))),
                    ]
                }
                if let failure = row.failure { members.append(("failure", .string(failure))) }
                return .object(members)
            })),
        ])
    }
}

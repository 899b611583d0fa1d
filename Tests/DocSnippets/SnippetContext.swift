// The names the documentation's code samples take as given (the app's own
// functions and values a sample calls or reads), so that each sample
// compiles as written (scripts/check-snippets.sh). The samples are compiled,
// never run: nothing here is ever called.
import TimerKit
import TrustedTime

private func never() -> Never {
    preconditionFailure("documentation samples are compiled, not run")
}

// TimerKit's samples.
var loop: TimerLoop { never() }
var deadline: MonotonicClock.Instant { never() }
var done: Bool { never() }
func showNextPage(skipping: Int) {}
func render(at timestamp: MonotonicClock.Instant, skipped: UInt64) {}
func render(remaining: Duration, skipped: UInt64) {}
func ring() {}

// TrustedTime's samples.
var clock: TrustedClock { never() }
var statePath: String { never() }
var saleStart: TrustedTime { never() }
func fetchServerTime() async throws -> (milliseconds: Int64, dateHeader: String) { never() }
func log(_ message: String) {}

/// What a sample's `self` is: an object of the app's with a method or two.
class SnippetContext {
    func tick() {}
    func hideHint() {}
}

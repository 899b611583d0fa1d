// The names the documentation's code samples take as given (the app's own
// functions and values a sample calls or reads), so that each sample
// compiles as written (scripts/check-snippets.sh). The samples are compiled,
// never run: nothing here is ever called.
import Countdowns
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
func sendPacket() {}
var ticker: FrameTicker { never() }
var connection: Connection { never() }

/// A network connection of the app's.
final class Connection: Sendable {
    func close() {}
}

// TrustedTime's samples.
var clock: TrustedClock { never() }
var statePath: String { never() }
var saleStart: TrustedTime { never() }
func fetchServerTime() async throws -> (milliseconds: Int64, dateHeader: String) { never() }
func log(_ message: String) {}

// Countdowns' samples.
var center: CountdownCenter { never() }
var trustedCenter: CountdownCenter { never() }
var cooldowns: Cooldowns { never() }
var received: BootClock.Instant { never() }
var label: Label { never() }
var page: Page { never() }
var button: Button { never() }

/// A view that shows a number.
struct Label: Sendable {
    func show(seconds: Int64) {}
}

/// A screen that can load its contents again.
struct Page: Sendable {
    func reload() {}
}

/// A button the user may or may not press.
final class Button: @unchecked Sendable {
    var isEnabled = true
}

/// What a sample's `self` is: an object of the app's with a method or two.
class SnippetContext {
    func tick() {}
    func hideHint() {}
}

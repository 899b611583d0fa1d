// expect: error: cannot find 'tk_sntp_query' in scope
//
// The core's module is the core: the SNTP client is a module of its own
// (CTimerSNTP).
import CTimerCore

func ask() -> Int32 {
    var result = tk_clock_now(TK_CLOCK_MONOTONIC, nil)
    result = tk_sntp_query("127.0.0.1", 123, 1_000_000_000, 1, nil)
    return result
}

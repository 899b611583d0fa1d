// expect: error: cannot find 'TrustedClock' in scope
//
// `import TimerKit` alone brings no trusted-time symbol: that is the
// TrustedTime module's.
import TimerKit

let clock = TrustedClock()

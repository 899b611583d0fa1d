import Glibc
import Testing

@testable import TimerKit

@Suite("Errno and SystemError")
struct ErrnoTests {
    @Test("an errno describes itself as strerror does, with its C name")
    func description() {
        #expect(Errno.noMemory.description == "Cannot allocate memory (ENOMEM)")
        #expect(Errno.invalidArgument.description == "Invalid argument (EINVAL)")
        #expect(Errno(rawValue: -EBUSY) == .resourceBusy)
        #expect(Errno.noMemory.name == "ENOMEM")
        #expect(Errno(rawValue: 4_000).name == nil)
        #expect(Errno(rawValue: 0).name == nil)
        #expect(Errno(rawValue: 4_000).description == "Unknown error (errno 4000)")
    }

    @Test("check passes non-negative results through")
    func nonNegativeResultsPass() throws {
        #expect(try SystemError.check(Int32(0), "tk_test") == 0)
        #expect(try SystemError.check(Int32(17), "tk_test") == 17)
        #expect(try SystemError.check(Int64.max, "tk_test") == Int64.max)
    }

    @Test("check turns a negative errno into a SystemError naming the function",
          arguments: [EINVAL, ENOENT, EBUSY, ENOMEM, ENOTSUP])
    func negativeResultsThrow(code: Int32) {
        #expect(throws: SystemError(errno: Errno(rawValue: code), function: "tk_loop_cancel")) {
            _ = try SystemError.check(-code, "tk_loop_cancel")
        }
        #expect(throws: SystemError(errno: Errno(rawValue: code), function: "tk_loop_advance")) {
            _ = try SystemError.check(-Int64(code), "tk_loop_advance")
        }
    }

    @Test("posix reads errno after a -1")
    func posixReadsErrno() {
        #expect(throws: SystemError(errno: .badFileDescriptor, function: "close")) {
            _ = try SystemError.posix(close(-1), "close")
        }
        #expect((try? SystemError.posix(Int32(3), "read")) == 3)
    }

    @Test("a SystemError reads like strerror, naming the function")
    func systemErrorDescription() {
        let error = SystemError(errno: .noMemory, function: "tk_loop_run")
        #expect(error.description == "tk_loop_run failed: Cannot allocate memory (ENOMEM)")
        #expect(TimerError.system(error).description == error.description)
    }

    @Test("errno values match in catch clauses")
    func patternMatching() {
        func fail() throws(TimerError) {
            throw .system(SystemError(errno: .noMemory, function: "tk_loop_run"))
        }
        var matched = false
        do {
            try fail()
        } catch TimerError.system(Errno.noMemory) {
            matched = true
        } catch {
            Issue.record("not matched: \(error)")
        }
        #expect(matched)
        #expect(Errno.noMemory ~= SystemError(errno: .noMemory, function: "f"))
        #expect(!(Errno.noMemory ~= SystemError(errno: .invalidArgument, function: "f")))
    }

    @Test("TimerError gives EBUSY and ENOTSUP cases of their own, only where they mean that")
    func timerErrorClassification() {
        #expect(TimerError(SystemError(errno: .resourceBusy, function: "tk_loop_run")) == .busy)
        #expect(TimerError(SystemError(errno: .resourceBusy, function: "tk_loop_advance")) == .busy)
        #expect(TimerError(SystemError(errno: .notSupported, function: "tk_loop_advance")) == .notManual)
        #expect(TimerError(SystemError(errno: .notSupported, function: "tk_loop_set_manual_time"))
                == .notManual)
        // Elsewhere the same errno keeps the function that failed.
        for failure in [
            SystemError(errno: .badFileDescriptor, function: "tk_loop_run"),
            SystemError(errno: .notSupported, function: "timerfd_create"),
            SystemError(errno: .resourceBusy, function: "pthread_mutex_lock"),
        ] {
            #expect(TimerError(failure) == .system(failure))
        }
    }
}

import Glibc
import Testing

@testable import TimerKit

@Suite("CoreError")
struct CoreErrorTests {
    @Test("checkCore passes non-negative results through")
    func nonNegativeResultsPass() throws {
        #expect(try checkCore(Int32(0), "tk_test") == 0)
        #expect(try checkCore(Int32(17), "tk_test") == 17)
        #expect(try checkCore(Int64.max, "tk_test") == Int64.max)
    }

    @Test("checkCore turns a negative errno into a CoreError naming the function",
          arguments: [EINVAL, ENOENT, EBUSY, ENOMEM, ENOTSUP])
    func negativeResultsThrow(errno: Int32) {
        #expect(throws: CoreError(code: errno, function: "tk_loop_cancel")) {
            _ = try checkCore(-errno, "tk_loop_cancel")
        }
        #expect(throws: CoreError(code: errno, function: "tk_loop_advance")) {
            _ = try checkCore(-Int64(errno), "tk_loop_advance")
        }
    }

    @Test("the description names the function and the errno value")
    func descriptionNamesFunctionAndCode() {
        let error = CoreError(code: ENOENT, function: "tk_loop_cancel")
        #expect(error.description == "tk_loop_cancel failed: errno \(ENOENT)")
    }
}

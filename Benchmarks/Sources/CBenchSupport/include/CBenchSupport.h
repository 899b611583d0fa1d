/*
 * CBenchSupport: the C side of the benchmarks (TimerBench); not part of
 * TimerKit's API.
 *
 * tkb_floor_run is the practical floor for timer wake-up lateness, the
 * reference every timer library is compared with: one timerfd on
 * CLOCK_MONOTONIC, armed with an absolute first deadline and a repeating
 * interval, and one epoll_wait on it; nothing a timer library could leave out.
 */
#ifndef CBENCHSUPPORT_H
#define CBENCHSUPPORT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Runs a repeating timerfd from `first_ns` (CLOCK_MONOTONIC, absolute) every
 * `period_ns` until it has woken `fires` times or CLOCK_MONOTONIC passes
 * `limit_ns`. For each wake-up, stores the timerfd's expiration count (grid
 * points the wake-up stands for) in `expirations[i]` and the time read right
 * after that count in `fire_ns[i]`.
 *
 * Returns the number of wake-ups recorded (fewer than `fires` only when the
 * limit passed), or a negative errno: -EINVAL for a non-positive first
 * deadline, period or count or a null array, -EIO for a short read of the
 * timerfd, or the error of a failing system call.
 */
int tkb_floor_run(int64_t first_ns, int64_t period_ns, int fires, int64_t limit_ns,
                  int64_t *fire_ns, uint64_t *expirations);

/*
 * Hands the allocator's free memory back to the system (glibc malloc_trim),
 * so that a later resident-memory delta counts the pages a measured side
 * touches rather than reusing freed ones. Returns 1 if memory was released.
 */
int tkb_release_free_memory(void);

/*
 * Bytes the allocator has handed out and not yet had back: glibc's
 * mallinfo2, the in-use bytes of the heap arenas plus the mmapped blocks.
 * Returns -1 where mallinfo2 is missing (not glibc 2.33 or later).
 */
int64_t tkb_heap_bytes_in_use(void);

#ifdef __cplusplus
}
#endif

#endif /* CBENCHSUPPORT_H */

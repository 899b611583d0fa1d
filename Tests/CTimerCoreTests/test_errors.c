/*
 * Every documented error of the CTimerCore API, and what a failed call must
 * leave behind: nothing changed, nothing leaked.
 *
 *   - NULL arguments to every function, unknown clocks, invalid timer specs
 *     (negative leeway or interval, empty modes, unknown flags), modes >= 32;
 *   - stale handles (cancelled, fired, double cancel; the slot reused by a new
 *     timer is not touched through the old handle) and handles never issued;
 *   - tk_loop_destroy while the loop runs (-EBUSY; the loop stays usable);
 *   - manual-only calls on a real loop (-ENOTSUP), manual clocks moved
 *     backwards (-EINVAL);
 *   - running out of descriptors (in a forked child with RLIMIT_NOFILE
 *     lowered): -EMFILE and no descriptor or memory left behind;
 *   - destroying loops with 100k pending timers and watched descriptors
 *     (the leak check of -fsanitize=address covers the memory);
 *   - tk_boot_id buffer sizes, saturation at INT64_MAX (run under
 *     -fsanitize=undefined to catch overflow);
 *   - after every failed call, the timers already scheduled are unchanged
 *     (tk_loop_timer_info) and still fire exactly as scheduled (manual loop).
 *
 * Usage: test_errors [seed] [--only=NAME]     (or env TK_SEED)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define US 1000LL
#define MS 1000000LL
#define SEC 1000000000LL

/* tk_loop_reserve(UINT32_MAX) is expected to fail with -ENOMEM; under
 * AddressSanitizer a failed huge allocation must return NULL, not abort. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* ------------------------------------------------------------------------
 * Bookkeeping
 * ------------------------------------------------------------------------ */

#include "test_harness.h"

#include "loop_internal.h" /* TK__HANDLE_KEY_STEP */

#include <malloc.h>
#if defined(__SANITIZE_ADDRESS__)
/* gcc ships no <sanitizer/allocator_interface.h>; its libasan has the call. */
size_t __sanitizer_get_current_allocated_bytes(void);
#elif defined(__has_include)
#if __has_include(<sanitizer/allocator_interface.h>)
#include <sanitizer/allocator_interface.h>
#endif
#endif

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

static int64_t sys_now(tk_clock c) {
    static const clockid_t ids[TK_CLOCK_COUNT] = {CLOCK_MONOTONIC, CLOCK_BOOTTIME,
                                                  CLOCK_REALTIME};
    struct timespec ts;
    clock_gettime(ids[c], &ts);
    return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static tk_timer_spec mkspec(tk_clock clock, int64_t deadline, int64_t interval, int64_t leeway,
                            tk_mode_set modes, uint32_t flags) {
    tk_timer_spec s;
    memset(&s, 0, sizeof s);
    s.clock = clock;
    if (flags & TK_TIMER_ABSOLUTE) s.deadline_ns = deadline; else s.delay_ns = deadline;
    s.interval_ns = interval;
    s.leeway_ns = leeway;
    s.modes = modes;
    s.flags = flags;
    return s;
}

static void count_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id, (void)missed;
    if (ctx) (*(int *)ctx)++;
}

static void io_count_fn(tk_loop *loop, int fd, uint32_t events, void *ctx) {
    (void)loop, (void)fd, (void)events;
    if (ctx) (*(int *)ctx)++;
}

static void change_count_fn(tk_loop *loop, void *ctx) {
    (void)loop;
    if (ctx) (*(int *)ctx)++;
}

static tk_timer_id sched(tk_loop *loop, tk_timer_spec spec, tk_timer_fn fn, void *ctx) {
    tk_timer_id id = TK_TIMER_NONE;
    int rc = tk_loop_schedule(loop, &spec, fn, ctx, &id);
    CHECK_EQ(rc, 0);
    CHECK(id != TK_TIMER_NONE);
    return id;
}

static tk_loop *new_real(void) {
    tk_loop *loop = NULL;
    int rc = tk_loop_create(&loop);
    CHECK_EQ(rc, 0);
    if (!loop) {
        fprintf(stderr, "cannot create a loop: %s\n", strerror(-rc));
        exit(1);
    }
    return loop;
}

static tk_loop *new_manual(int64_t start) {
    tk_loop *loop = NULL;
    int rc = tk_loop_create_manual(&loop, start);
    CHECK_EQ(rc, 0);
    if (!loop) {
        fprintf(stderr, "cannot create a manual loop: %s\n", strerror(-rc));
        exit(1);
    }
    return loop;
}

static uint64_t pending_of(tk_loop *loop) {
    tk_loop_stats st;
    memset(&st, 0, sizeof st);
    CHECK_EQ(tk_loop_get_stats(loop, &st), 0);
    return st.pending;
}

/* Open descriptors 0 .. FD_SCAN-1, found without opening any. */
#define FD_SCAN 1024
typedef struct fd_snap { unsigned char open[FD_SCAN]; } fd_snap;

static void fd_snapshot(fd_snap *s) {
    for (int fd = 0; fd < FD_SCAN; fd++) s->open[fd] = fcntl(fd, F_GETFD) != -1;
}

static int fd_snap_diff(const fd_snap *a, const fd_snap *b) {
    int d = 0;
    for (int fd = 0; fd < FD_SCAN; fd++) {
        if (a->open[fd] != b->open[fd]) {
            if (d < 5) fprintf(stderr, "  fd %d %s\n", fd, b->open[fd] ? "left open" : "closed");
            d++;
        }
    }
    return d;
}

/* ------------------------------------------------------------------------
 * Snapshots of scheduled timers: a failed call must change none of them
 * ------------------------------------------------------------------------ */

#define SNAP_MAX 32
typedef struct timer_snap {
    int n;
    tk_timer_id ids[SNAP_MAX];
    tk_timer_info infos[SNAP_MAX];
    uint64_t pending;
    int64_t now[TK_CLOCK_COUNT];
} timer_snap;

static void snap_take(tk_loop *loop, const tk_timer_id *ids, int n, timer_snap *s) {
    memset(s, 0, sizeof *s);
    s->n = n;
    for (int i = 0; i < n; i++) {
        s->ids[i] = ids[i];
        CHECK_EQ(tk_loop_timer_info(loop, ids[i], &s->infos[i]), 0);
    }
    s->pending = pending_of(loop);
    for (int c = 0; c < TK_CLOCK_COUNT; c++) CHECK_EQ(tk_loop_now(loop, (tk_clock)c, &s->now[c]), 0);
}

/* Compares the loop with the snapshot; `manual` also compares the clocks. */
static int snap_diff(tk_loop *loop, const timer_snap *s, int manual) {
    int d = 0;
    for (int i = 0; i < s->n; i++) {
        tk_timer_info info;
        memset(&info, 0, sizeof info);
        int rc = tk_loop_timer_info(loop, s->ids[i], &info);
        const tk_timer_info *w = &s->infos[i];
        if (rc != 0 || info.clock != w->clock || info.deadline_ns != w->deadline_ns ||
            info.interval_ns != w->interval_ns || info.leeway_ns != w->leeway_ns ||
            info.modes != w->modes || info.waiting_for_mode != w->waiting_for_mode ||
            info.flags != w->flags)
            d++;
    }
    if (pending_of(loop) != s->pending) d++;
    if (manual) {
        for (int c = 0; c < TK_CLOCK_COUNT; c++) {
            int64_t now = 0;
            if (tk_loop_now(loop, (tk_clock)c, &now) != 0 || now != s->now[c]) d++;
        }
    }
    return d;
}

/* Checks `call` returned `want` and that nothing changed. */
#define EXPECT_FAIL(call, want, loop, snap, manual)                            \
    do {                                                                       \
        CHECK_EQ((call), (want));                                              \
        CHECK_EQ(snap_diff((loop), (snap), (manual)), 0);                      \
    } while (0)

/* The invalid specs: each one alone is enough for -EINVAL. */
#define N_BAD_SPECS 17
static tk_timer_spec bad_spec(int k) {
    tk_timer_spec s = mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0);
    switch (k) {
    case 0: s.clock = (tk_clock)3; break;
    case 1: s.clock = (tk_clock)-1; break;
    case 2: s.clock = (tk_clock)1000; break;
    case 3: s.interval_ns = -1; break;
    case 4: s.interval_ns = INT64_MIN; break;
    case 5: s.leeway_ns = -1; break;
    case 6: s.leeway_ns = INT64_MIN; s.interval_ns = MS; break;
    case 7: s.modes = TK_MODES_INVALID; break;
    case 8: s.flags = TK_TIMER_PRECISE; s.leeway_ns = 1; break; /* precise has no leeway */
    case 9: s.flags = TK_TIMER_ABSOLUTE | 0x4; break;
    case 10: s.flags = 0x80000000u; break;
    case 11: s.flags = 0xffffffffu; break;
    case 12: s.modes = TK_MODES(40) | TK_MODES(0); s.interval_ns = MS; break;
    /* The first fire in the field the flags do not name: a relative time in
     * deadline_ns (what it meant before API version 2), or a delay_ns next
     * to TK_TIMER_ABSOLUTE. */
    case 13: s.delay_ns = 0; s.deadline_ns = 5 * MS; break;
    case 14: s.flags = TK_TIMER_ABSOLUTE; break;
    case 15: s.deadline_ns = -1; break;
    default: s.leeway_ns = -MS; s.interval_ns = 10 * MS; break;
    }
    return s;
}

/* Random handles that are not among `live`. */
static tk_timer_id random_unissued(const tk_timer_id *live, int n) {
    for (;;) {
        tk_timer_id h = rng_next(&g_rng);
        int clash = h == TK_TIMER_NONE;
        for (int i = 0; i < n && !clash; i++) clash = h == live[i];
        if (!clash) return h;
    }
}

/* Runs every failing call that does not need a running loop against
 * `loop`, checking after each that the timers in `snap` are unchanged. */
static void failing_calls(tk_loop *loop, const timer_snap *snap, int manual,
                          const tk_timer_id *stale, int nstale) {
    tk_timer_spec good = mkspec(TK_CLOCK_MONOTONIC, 3 * MS, 0, 0, TK_MODES(0), 0);
    tk_timer_id out = TK_TIMER_NONE;
    tk_timer_info info;
    int64_t now;

    /* Scheduling */
    for (int k = 0; k < N_BAD_SPECS; k++) {
        tk_timer_spec s = bad_spec(k);
        EXPECT_FAIL(tk_loop_schedule(loop, &s, count_fn, NULL, &out), -EINVAL, loop, snap, manual);
    }
    EXPECT_FAIL(tk_loop_schedule(loop, NULL, count_fn, NULL, &out), -EINVAL, loop, snap, manual);
    EXPECT_FAIL(tk_loop_schedule(loop, &good, NULL, NULL, &out), -EINVAL, loop, snap, manual);
    EXPECT_FAIL(tk_loop_schedule(loop, &good, count_fn, NULL, NULL), -EINVAL, loop, snap, manual);

    /* Rescheduling a live timer with a bad spec */
    for (int i = 0; i < snap->n; i++) {
        for (int k = 0; k < N_BAD_SPECS; k++) {
            tk_timer_spec s = bad_spec(k);
            EXPECT_FAIL(tk_loop_reschedule(loop, snap->ids[i], &s), -EINVAL, loop, snap, manual);
        }
        EXPECT_FAIL(tk_loop_reschedule(loop, snap->ids[i], NULL), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_reschedule(NULL, snap->ids[i], &good), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_cancel(NULL, snap->ids[i]), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_fire(NULL, snap->ids[i]), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_timer_info(loop, snap->ids[i], NULL), -EINVAL, loop, snap, manual);
    }

    /* Stale and never-issued handles */
    for (int i = 0; i < nstale; i++) {
        EXPECT_FAIL(tk_loop_cancel(loop, stale[i]), -ENOENT, loop, snap, manual);
        EXPECT_FAIL(tk_loop_reschedule(loop, stale[i], &good), -ENOENT, loop, snap, manual);
        EXPECT_FAIL(tk_loop_fire(loop, stale[i]), -ENOENT, loop, snap, manual);
        EXPECT_FAIL(tk_loop_timer_info(loop, stale[i], &info), -ENOENT, loop, snap, manual);
    }
    for (int i = 0; i < 50; i++) {
        tk_timer_id h = random_unissued(snap->ids, snap->n);
        EXPECT_FAIL(tk_loop_cancel(loop, h), -ENOENT, loop, snap, manual);
        EXPECT_FAIL(tk_loop_reschedule(loop, h, &good), -ENOENT, loop, snap, manual);
        EXPECT_FAIL(tk_loop_fire(loop, h), -ENOENT, loop, snap, manual);
    }
    EXPECT_FAIL(tk_loop_cancel(loop, TK_TIMER_NONE), -ENOENT, loop, snap, manual);
    EXPECT_FAIL(tk_loop_reschedule(loop, TK_TIMER_NONE, &good), -ENOENT, loop, snap, manual);
    EXPECT_FAIL(tk_loop_fire(loop, TK_TIMER_NONE), -ENOENT, loop, snap, manual);

    /* Clocks and manual time */
    EXPECT_FAIL(tk_loop_now(loop, (tk_clock)3, &now), -EINVAL, loop, snap, manual);
    EXPECT_FAIL(tk_loop_now(loop, TK_CLOCK_MONOTONIC, NULL), -EINVAL, loop, snap, manual);
    if (manual) {
        int64_t mono = snap->now[TK_CLOCK_MONOTONIC], boot = snap->now[TK_CLOCK_BOOTTIME];
        EXPECT_FAIL(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, mono - 1), -EINVAL, loop,
                    snap, manual);
        EXPECT_FAIL(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, INT64_MIN), -EINVAL, loop,
                    snap, manual);
        EXPECT_FAIL(tk_loop_set_manual_time(loop, TK_CLOCK_BOOTTIME, boot - SEC), -EINVAL, loop,
                    snap, manual);
        EXPECT_FAIL(tk_loop_set_manual_time(loop, (tk_clock)3, mono + SEC), -EINVAL, loop, snap,
                    manual);
        EXPECT_FAIL(tk_loop_advance(loop, 0, -1), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_advance(loop, 0, INT64_MIN), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_advance(loop, TK_MODE_COUNT, SEC), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_advance(loop, 0xffffffffu, SEC), -EINVAL, loop, snap, manual);
        EXPECT_FAIL(tk_loop_advance(loop, TK_MODES(0) | TK_MODES(1), SEC), -EINVAL, loop, snap,
                    manual);
        EXPECT_FAIL(tk_loop_advance(loop, TK_MODES_INVALID, SEC), -EINVAL, loop, snap, manual);
    } else {
        EXPECT_FAIL(tk_loop_advance(loop, 0, 0), -ENOTSUP, loop, snap, manual);
        EXPECT_FAIL(tk_loop_advance(loop, 0, SEC), -ENOTSUP, loop, snap, manual);
        EXPECT_FAIL(tk_loop_set_manual_time(loop, TK_CLOCK_REALTIME, 0), -ENOTSUP, loop, snap,
                    manual);
        EXPECT_FAIL(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, INT64_MAX / 2), -ENOTSUP,
                    loop, snap, manual);
    }
    EXPECT_FAIL(tk_loop_run(loop, TK_MODES(TK_MODE_COUNT), TK_FOREVER, TK_RUN_NOWAIT), -EINVAL,
                loop, snap, manual);
    /* A set of several modes, as a timer's, is not one mode to run in. */
    EXPECT_FAIL(tk_loop_run(loop, 3, TK_FOREVER, TK_RUN_NOWAIT), -EINVAL, loop, snap, manual);
    EXPECT_FAIL(tk_loop_run(loop, 1000, TK_FOREVER, TK_RUN_NOWAIT), -EINVAL, loop, snap, manual);

    /* Descriptors */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    close(p[0]);
    close(p[1]);
    CHECK(tk_loop_watch_fd(loop, -1, TK_IO_READABLE, io_count_fn, NULL) < 0);
    CHECK_EQ(snap_diff(loop, snap, manual), 0);
    EXPECT_FAIL(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_count_fn, NULL), -EBADF, loop,
                snap, manual);
    EXPECT_FAIL(tk_loop_unwatch_fd(loop, p[0]), -ENOENT, loop, snap, manual);
    EXPECT_FAIL(tk_loop_unwatch_fd(loop, 0), -ENOENT, loop, snap, manual);

    /* Growth that cannot be had */
    for (int c = 0; c < TK_CLOCK_COUNT; c++) {
        int rc = tk_loop_reserve(loop, (tk_clock)c, UINT32_MAX);
        CHECK(rc == 0 || rc == -ENOMEM);
        CHECK_EQ(snap_diff(loop, snap, manual), 0);
    }
    EXPECT_FAIL(tk_loop_reserve(loop, (tk_clock)3, 16), -EINVAL, loop, snap, manual);
    EXPECT_FAIL(tk_loop_reserve(loop, (tk_clock)-1, 16), -EINVAL, loop, snap, manual);
}

/* ------------------------------------------------------------------------
 * NULL arguments, unknown clocks
 * ------------------------------------------------------------------------ */

static void test_null_arguments(void) {
    tk_loop *loop = new_manual(SEC);
    tk_timer_spec good = mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0);
    tk_timer_id id = sched(loop, good, count_fn, NULL); /* a NULL context is fine */
    tk_timer_id out = TK_TIMER_NONE;
    tk_timer_info info;
    tk_loop_stats st;
    int64_t x;
    int p[2];
    CHECK_EQ(pipe(p), 0);

    CHECK_EQ(tk_clock_now(TK_CLOCK_MONOTONIC, NULL), -EINVAL);
    CHECK_EQ(tk_clock_now_kernel(TK_CLOCK_MONOTONIC, NULL), -EINVAL);
    CHECK_EQ(tk_clock_resolution(TK_CLOCK_MONOTONIC, NULL), -EINVAL);
    CHECK_EQ(tk_boot_id(NULL, 64), -EINVAL);
    CHECK_EQ(tk_timer_slack(NULL), -EINVAL);
    CHECK_EQ(tk_loop_create(NULL), -EINVAL);
    CHECK_EQ(tk_loop_create_manual(NULL, 0), -EINVAL);
    CHECK_EQ(tk_loop_destroy(NULL), -EINVAL);
    CHECK_EQ(tk_loop_reserve(NULL, TK_CLOCK_MONOTONIC, 16), -EINVAL);
    CHECK_EQ(tk_loop_now(NULL, TK_CLOCK_MONOTONIC, &x), -EINVAL);
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, NULL), -EINVAL);
    CHECK_EQ(tk_loop_run(NULL, 0, TK_FOREVER, TK_RUN_NOWAIT), -EINVAL);
    CHECK_EQ(tk_loop_stop(NULL), -EINVAL);
    CHECK_EQ(tk_loop_take_stop(NULL), -EINVAL);
    CHECK_EQ(tk_loop_wakeup(NULL), -EINVAL);
    CHECK_EQ(tk_loop_set_clock_change_handler(NULL, change_count_fn, NULL), -EINVAL);
    CHECK_EQ(tk_loop_set_clock_change_handler(NULL, NULL, NULL), -EINVAL);
    CHECK_EQ(tk_loop_set_hold(NULL, NULL, NULL), -EINVAL);
    CHECK_EQ(tk_loop_set_hold(loop, NULL, &x), -EINVAL); /* a context with no function */
    CHECK_EQ(tk_loop_get_stats(NULL, &st), -EINVAL);
    CHECK_EQ(tk_loop_get_stats(loop, NULL), -EINVAL);
    CHECK_EQ(tk_loop_schedule(NULL, &good, count_fn, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule(loop, NULL, count_fn, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule(loop, &good, NULL, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule(loop, &good, count_fn, NULL, NULL), -EINVAL);
    CHECK_EQ(tk_loop_cancel(NULL, id), -EINVAL);
    void *taken = &x;
    CHECK_EQ(tk_loop_cancel_take(NULL, id, &taken), -EINVAL);
    CHECK_EQ(tk_loop_cancel_take(loop, id, NULL), -EINVAL);
    CHECK(taken == &x);
    tk_timer_record record = TK_TIMER_RECORD_INIT;
    CHECK_EQ(tk_loop_schedule_record(NULL, &record, &good, count_fn, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule_record(loop, NULL, &good, count_fn, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule_record(loop, &record, NULL, count_fn, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &good, NULL, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &good, count_fn, NULL, NULL), -EINVAL);
    static const tk_timer_record zero_record = TK_TIMER_RECORD_INIT;
    CHECK(memcmp(&record, &zero_record, sizeof record) == 0);
    /* A record that is not aligned as its type is. */
    _Alignas(tk_timer_record) unsigned char raw[sizeof(tk_timer_record) + 8] = {0};
    CHECK_EQ(tk_loop_schedule_record(loop, (tk_timer_record *)(void *)(raw + 4), &good, count_fn,
                                     NULL, &out),
             -EINVAL);
    CHECK_EQ(tk_loop_cancel_record(NULL, &record, &taken), -EINVAL);
    CHECK_EQ(tk_loop_cancel_record(loop, NULL, &taken), -EINVAL);
    CHECK_EQ(tk_loop_cancel_record(loop, &record, NULL), -EINVAL);
    CHECK_EQ(tk_loop_cancel_record(loop, (tk_timer_record *)(void *)(raw + 4), &taken), -EINVAL);
    CHECK_EQ(tk_loop_cancel_record(loop, &record, &taken), -ENOENT);
    CHECK(taken == &x);
    CHECK_EQ(tk_loop_reschedule(NULL, id, &good), -EINVAL);
    CHECK_EQ(tk_loop_reschedule(loop, id, NULL), -EINVAL);
    CHECK_EQ(tk_loop_timer_info(NULL, id, &info), -EINVAL);
    CHECK_EQ(tk_loop_timer_info(loop, id, NULL), -EINVAL);
    CHECK_EQ(tk_loop_fire(NULL, id), -EINVAL);
    CHECK_EQ(tk_loop_watch_fd(NULL, p[0], TK_IO_READABLE, io_count_fn, NULL), -EINVAL);
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, NULL, NULL), -EINVAL);
    CHECK_EQ(tk_loop_unwatch_fd(NULL, p[0]), -EINVAL);
    CHECK_EQ(tk_loop_advance(NULL, 0, 0), -EINVAL);
    CHECK_EQ(tk_loop_set_manual_time(NULL, TK_CLOCK_MONOTONIC, 2 * SEC), -EINVAL);

    /* None of that touched the timer, the watch list or the clocks. */
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), -ENOENT);
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(info.deadline_ns, SEC + MS);
    CHECK_EQ(pending_of(loop), 1);
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &x), 0);
    CHECK_EQ(x, SEC);
    CHECK_EQ(tk_loop_advance(loop, 0, MS), 1);
    close(p[0]);
    close(p[1]);
    CHECK_EQ(tk_loop_destroy(loop), 0);

    /* The same on a real loop. */
    loop = new_real();
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_REALTIME, NULL), -EINVAL);
    CHECK_EQ(tk_loop_get_stats(loop, NULL), -EINVAL);
    CHECK_EQ(tk_loop_schedule(loop, &good, NULL, NULL, &out), -EINVAL);
    CHECK_EQ(tk_loop_schedule(loop, &good, count_fn, NULL, NULL), -EINVAL);
    CHECK_EQ(tk_loop_schedule(loop, NULL, count_fn, NULL, &out), -EINVAL);
    CHECK_EQ(pending_of(loop), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A record is the loop's while its timer lives: scheduling it again, on this
 * loop or another, is -EBUSY and changes nothing; once the loop is done with
 * it (its release handler has the context), it can be scheduled again. A
 * failed call leaves the record as it was. */
static int records_released;

static void count_release(tk_loop *loop, void *ctx) {
    (void)loop, (void)ctx;
    records_released++;
}

static void test_record_busy(void) {
    tk_loop *loop = new_manual(SEC), *other = new_manual(SEC);
    CHECK_EQ(tk_loop_set_release_handler(loop, count_release), 0);
    tk_timer_spec spec = mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0);
    tk_timer_record record = TK_TIMER_RECORD_INIT;
    int fired = 0;
    tk_timer_id id = TK_TIMER_NONE, again = TK_TIMER_NONE;
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &spec, count_fn, &fired, &id), 0);
    CHECK(id != TK_TIMER_NONE);
    tk_timer_record before = record;
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &spec, count_fn, &fired, &again), -EBUSY);
    CHECK_EQ(tk_loop_schedule_record(other, &record, &spec, count_fn, &fired, &again), -EBUSY);
    CHECK(again == TK_TIMER_NONE);
    CHECK(memcmp(&record, &before, sizeof record) == 0);
    CHECK_EQ(pending_of(loop), 1);
    CHECK_EQ(pending_of(other), 0);

    /* A bad spec, on a fresh record: refused, the record still zero. */
    tk_timer_record fresh = TK_TIMER_RECORD_INIT;
    static const tk_timer_record zero_record = TK_TIMER_RECORD_INIT;
    tk_timer_spec bad = spec;
    bad.leeway_ns = -1;
    CHECK_EQ(tk_loop_schedule_record(loop, &fresh, &bad, count_fn, NULL, &again), -EINVAL);
    CHECK(memcmp(&fresh, &zero_record, sizeof fresh) == 0);

    /* Its handle works as any: info, then the fire. */
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(info.deadline_ns, SEC + MS);
    CHECK_EQ(tk_loop_advance(loop, 0, MS), 1);
    CHECK_EQ(fired, 1);
    CHECK_EQ(records_released, 1);
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), -ENOENT);

    /* Released: the record goes again, on either loop. */
    CHECK_EQ(tk_loop_schedule_record(other, &record, &spec, count_fn, &fired, &again), 0);
    CHECK(again != TK_TIMER_NONE);
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &spec, count_fn, &fired, &id), -EBUSY);
    CHECK_EQ(tk_loop_advance(other, 0, MS), 1);
    CHECK_EQ(fired, 2);
    CHECK_EQ(tk_loop_destroy(other), 0);

    /* Pending when its loop is destroyed: free once that returns, with no
     * release handler as with one. */
    other = new_manual(SEC);
    CHECK_EQ(tk_loop_schedule_record(other, &record, &spec, count_fn, &fired, &again), 0);
    CHECK_EQ(tk_loop_schedule_record(loop, &fresh, &spec, count_fn, &fired, &id), 0);
    CHECK_EQ(tk_loop_destroy(other), 0); /* no release handler */
    CHECK_EQ(records_released, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    CHECK_EQ(records_released, 2);
    loop = new_manual(SEC);
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &spec, count_fn, &fired, &id), 0);
    CHECK_EQ(tk_loop_schedule_record(loop, &fresh, &spec, count_fn, &fired, &again), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, MS), 2);
    CHECK_EQ(fired, 4);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A loop makes its slots array for its first timer with a record of the
 * caller's, and not before (white-box: a loop that never schedules one pays
 * nothing for it). Handles made before stay good, and stale ones stale. */
static void test_slots_made_on_first_record(void) {
    tk_loop *loop = new_manual(SEC);
    tk_timer_spec spec = mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0);
    enum { N = 100 };
    tk_timer_id ids[N];
    for (int i = 0; i < N; i++) ids[i] = sched(loop, spec, count_fn, NULL);
    for (int i = 0; i < N; i += 2) CHECK_EQ(tk_loop_cancel(loop, ids[i]), 0);
    tk_timer_id again[N / 2];
    for (int i = 0; i < N / 2; i++) again[i] = sched(loop, spec, count_fn, NULL);
    CHECK(loop->slots == NULL);

    tk_timer_record record = TK_TIMER_RECORD_INIT;
    tk_timer_id recorded = TK_TIMER_NONE;
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &spec, count_fn, NULL, &recorded), 0);
    CHECK(loop->slots != NULL);
    tk_timer_info info;
    for (int i = 0; i < N; i++) {
        /* Cancelled ones stay stale, though their slots were used again. */
        CHECK_EQ(tk_loop_timer_info(loop, ids[i], &info), i % 2 ? 0 : -ENOENT);
    }
    for (int i = 0; i < N / 2; i++) CHECK_EQ(tk_loop_timer_info(loop, again[i], &info), 0);
    CHECK_EQ(tk_loop_timer_info(loop, recorded, &info), 0);
    for (int i = 0; i < N / 2; i++) CHECK(again[i] != ids[2 * i] && again[i] != recorded);
    int fired = 0;
    tk_timer_spec later = mkspec(TK_CLOCK_MONOTONIC, 2 * MS, 0, 0, TK_MODES(0), 0);
    tk_timer_id one_more = sched(loop, later, count_fn, &fired);
    CHECK_EQ(tk_loop_advance(loop, 0, MS), N / 2 + N / 2 + 1);
    CHECK_EQ(tk_loop_advance(loop, 0, MS), 1);
    CHECK_EQ(fired, 1);
    CHECK_EQ(tk_loop_cancel(loop, one_more), -ENOENT);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_unknown_clock(void) {
    tk_clock bad[4] = {(tk_clock)3, (tk_clock)4, (tk_clock)-1, (tk_clock)0x7fffffff};
    int64_t x = 12345;
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(tk_clock_now(bad[i], &x), -EINVAL);
        CHECK_EQ(tk_clock_now_kernel(bad[i], &x), -EINVAL);
        CHECK_EQ(tk_clock_resolution(bad[i], &x), -EINVAL);
    }
    tk_loop *loops[2] = {new_manual(0), new_real()};
    for (int l = 0; l < 2; l++) {
        for (int i = 0; i < 4; i++) {
            CHECK_EQ(tk_loop_now(loops[l], bad[i], &x), -EINVAL);
            tk_timer_spec s = mkspec(bad[i], MS, 0, 0, TK_MODES(0), 0);
            tk_timer_id out;
            CHECK_EQ(tk_loop_schedule(loops[l], &s, count_fn, NULL, &out), -EINVAL);
            CHECK_EQ(tk_loop_reserve(loops[l], bad[i], 16), -EINVAL);
            if (l == 0) CHECK_EQ(tk_loop_set_manual_time(loops[l], bad[i], SEC), -EINVAL);
            else CHECK(tk_loop_set_manual_time(loops[l], bad[i], SEC) < 0);
        }
        CHECK_EQ(pending_of(loops[l]), 0);
        CHECK_EQ(tk_loop_destroy(loops[l]), 0);
    }
    /* The known clocks work and read what clock_gettime reads; so does
     * the kernel's own reading, where nothing preloaded changes it. */
    for (int c = 0; c < TK_CLOCK_COUNT; c++) {
        int64_t before = sys_now((tk_clock)c);
        CHECK_EQ(tk_clock_now((tk_clock)c, &x), 0);
        int64_t after = sys_now((tk_clock)c);
        CHECK(x >= before && x <= after);
        before = sys_now((tk_clock)c);
        CHECK_EQ(tk_clock_now_kernel((tk_clock)c, &x), 0);
        after = sys_now((tk_clock)c);
        CHECK(x >= before && x <= after);
        CHECK_EQ(tk_clock_resolution((tk_clock)c, &x), 0);
        CHECK(x > 0 && x <= SEC);
    }
}

static void test_boot_id(void) {
    size_t small[5] = {0, 1, 2, 35, 36};
    for (int i = 0; i < 5; i++) {
        /* exactly `size` bytes, so AddressSanitizer sees any overrun */
        char *buf = malloc(small[i] ? small[i] : 1);
        CHECK(buf != NULL);
        CHECK_EQ(tk_boot_id(buf, small[i]), -ERANGE);
        free(buf);
    }
    char *buf = malloc(37);
    CHECK(buf != NULL);
    memset(buf, 'x', 37);
    CHECK_EQ(tk_boot_id(buf, 37), 0);
    CHECK_EQ(buf[36], 0);
    CHECK_EQ(strlen(buf), 36);
    int shape_ok = 1;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) shape_ok &= buf[i] == '-';
        else shape_ok &= isxdigit((unsigned char)buf[i]) != 0;
    }
    CHECK(shape_ok);
    char want[64] = {0};
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    CHECK(f != NULL);
    if (f) {
        CHECK(fgets(want, sizeof want, f) != NULL);
        fclose(f);
        CHECK_EQ(strncmp(buf, want, 36), 0);
    }
    char big[100];
    CHECK_EQ(tk_boot_id(big, sizeof big), 0);
    CHECK_EQ(strcmp(big, buf), 0);
    free(buf);
}

static void *slack_thread(void *arg) {
    int64_t *out = arg;
    if (prctl(PR_SET_TIMERSLACK, 123456UL, 0, 0, 0) != 0) {
        *out = -2;
        return NULL;
    }
    if (tk_timer_slack(out) != 0) *out = -1;
    return NULL;
}

static void test_timer_slack(void) {
    int64_t slack = -1;
    CHECK_EQ(tk_timer_slack(&slack), 0);
    CHECK_EQ(slack, (int64_t)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
    /* Per thread. */
    pthread_t t;
    int64_t other = 0;
    CHECK_EQ(pthread_create(&t, NULL, slack_thread, &other), 0);
    pthread_join(t, NULL);
    CHECK_EQ(other, 123456);
    CHECK_EQ(tk_timer_slack(&slack), 0);
    CHECK_EQ(slack, (int64_t)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
}

/* ------------------------------------------------------------------------
 * Invalid specs, modes; failed calls leave the timers alone
 * ------------------------------------------------------------------------ */

typedef struct fire_rec {
    tk_clock clock;
    int64_t deadline0, interval;
    int count;
    int bad;
} fire_rec;

/* Checks that the loop's clock reads this fire's grid point exactly. */
static void exact_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)id;
    fire_rec *r = ctx;
    int64_t now = 0;
    if (tk_loop_now(loop, r->clock, &now) != 0 || now != r->deadline0 + r->count * r->interval ||
        missed != 0)
        r->bad++;
    r->count++;
}

static void test_failed_calls_keep_timers_manual(void) {
    enum { N = 8 };
    const int64_t start = 10 * SEC;
    tk_loop *loop = new_manual(start);
    fire_rec recs[N];
    tk_timer_id ids[N];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 6; i++) {
        recs[i].clock = (tk_clock)(i % TK_CLOCK_COUNT);
        recs[i].deadline0 = start + (i + 1) * MS + i * 100 * US;
        tk_mode_set modes = TK_MODES(0) | ((i % 2) ? TK_MODES(4) : 0);
        ids[i] = sched(loop, mkspec(recs[i].clock, recs[i].deadline0 - start, 0, 0, modes, 0),
                       exact_fn, &recs[i]);
    }
    recs[6] = (fire_rec){TK_CLOCK_MONOTONIC, start + 500 * US, 7 * MS, 0, 0};
    ids[6] = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 500 * US, 7 * MS, 0, TK_MODES(0), 0), exact_fn,
                   &recs[6]);
    recs[7] = (fire_rec){TK_CLOCK_REALTIME, start + 2 * MS, 11 * MS, 0, 0};
    ids[7] = sched(loop, mkspec(TK_CLOCK_REALTIME, start + 2 * MS, 11 * MS, 0, TK_MODES(0),
                                TK_TIMER_ABSOLUTE),
                   exact_fn, &recs[7]);

    /* Some stale handles: a cancelled one, and a one-shot that fired. */
    tk_timer_id stale[2];
    stale[0] = sched(loop, mkspec(TK_CLOCK_BOOTTIME, SEC, 0, 0, TK_MODES(0), 0), count_fn, NULL);
    CHECK_EQ(tk_loop_cancel(loop, stale[0]), 0);
    int fired_once = 0;
    stale[1] = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(9), 0), count_fn,
                     &fired_once);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(9), 0), 1);
    CHECK_EQ(fired_once, 1);

    timer_snap snap;
    snap_take(loop, ids, N, &snap);
    failing_calls(loop, &snap, 1, stale, 2);

    /* Destroying a loop from outside while it is idle is fine; from a
     * callback it is not (covered below). The timers now fire exactly. */
    int64_t span = 50 * MS;
    int64_t want_calls = 0;
    int want_counts[N];
    for (int i = 0; i < N; i++) {
        if (recs[i].interval == 0) want_counts[i] = 1;
        else want_counts[i] = (int)((start + span - recs[i].deadline0) / recs[i].interval) + 1;
        want_calls += want_counts[i];
    }
    CHECK_EQ(tk_loop_advance(loop, 0, span), want_calls);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(recs[i].count, want_counts[i]);
        CHECK_EQ(recs[i].bad, 0);
    }
    CHECK_EQ(fired_once, 1);
    CHECK_EQ(pending_of(loop), 2);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

typedef struct real_rec {
    int count;
    int early;
    tk_clock clock;
    int64_t deadline;
    int target;
    int *total;
} real_rec;

static void real_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)id, (void)missed;
    real_rec *r = ctx;
    if (sys_now(r->clock) < r->deadline) r->early++;
    r->count++;
    if (++*r->total == r->target) tk_loop_stop(loop);
}

static void test_failed_calls_keep_timers_real(void) {
    enum { N = 6 };
    tk_loop *loop = new_real();
    real_rec recs[N];
    tk_timer_id ids[N];
    int total = 0;
    for (int i = 0; i < N; i++) {
        recs[i] = (real_rec){.clock = (tk_clock)(i % TK_CLOCK_COUNT), .target = N, .total = &total};
        recs[i].deadline = sys_now(recs[i].clock) + 2 * SEC + i * MS;
        ids[i] = sched(loop, mkspec(recs[i].clock, recs[i].deadline, 0, (i % 2) * MS,
                                    TK_MODES(0) | TK_MODES(2), TK_TIMER_ABSOLUTE),
                       real_fn, &recs[i]);
    }
    tk_timer_id stale = sched(loop, mkspec(TK_CLOCK_REALTIME, SEC, 0, 0, TK_MODES(0), 0), count_fn,
                              NULL);
    CHECK_EQ(tk_loop_cancel(loop, stale), 0);
    timer_snap snap;
    snap_take(loop, ids, N, &snap);
    failing_calls(loop, &snap, 0, &stale, 1);
    /* They fire, never early. */
    CHECK_EQ(tk_loop_run(loop, TK_MODES(2), sys_now(TK_CLOCK_MONOTONIC) + 30 * SEC, 0),
             TK_RUN_STOPPED);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(recs[i].count, 1);
        CHECK_EQ(recs[i].early, 0);
    }
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ------------------------------------------------------------------------
 * Stale handles and slot reuse
 * ------------------------------------------------------------------------ */

static void test_stale_handles(void) {
    const int64_t start = SEC;
    tk_loop *loop = new_manual(start);
    tk_timer_spec far = mkspec(TK_CLOCK_MONOTONIC, 10 * SEC, 0, 0, TK_MODES(0), 0);
    tk_timer_info info;

    /* Double cancel; the slot goes to a new timer, the old handle stays dead. */
    int a_calls = 0, b_calls = 0;
    tk_timer_id a = sched(loop, far, count_fn, &a_calls);
    CHECK_EQ(tk_loop_cancel(loop, a), 0);
    CHECK_EQ(tk_loop_cancel(loop, a), -ENOENT);
    tk_timer_spec bspec = mkspec(TK_CLOCK_REALTIME, 20 * SEC, SEC, 0, TK_MODES(1), 0);
    tk_timer_id b = sched(loop, bspec, count_fn, &b_calls);
    CHECK(b != a);
    CHECK_EQ(tk_loop_cancel(loop, a), -ENOENT);
    CHECK_EQ(tk_loop_reschedule(loop, a, &far), -ENOENT);
    CHECK_EQ(tk_loop_fire(loop, a), -ENOENT);
    CHECK_EQ(tk_loop_timer_info(loop, a, &info), -ENOENT);
    CHECK_EQ(tk_loop_timer_info(loop, b, &info), 0);
    CHECK_EQ(info.clock, TK_CLOCK_REALTIME);
    CHECK_EQ(info.deadline_ns, start + 20 * SEC);
    CHECK_EQ(info.interval_ns, SEC);
    CHECK_EQ(info.modes, TK_MODES(1));
    CHECK_EQ(a_calls, 0);
    CHECK_EQ(b_calls, 0);
    CHECK_EQ(pending_of(loop), 1);
    CHECK_EQ(tk_loop_cancel(loop, b), 0);

    /* A fired one-shot's handle is stale too, also after reuse. */
    int c_calls = 0;
    tk_timer_id c = sched(loop, mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0), count_fn,
                          &c_calls);
    CHECK_EQ(tk_loop_advance(loop, 0, 2 * MS), 1);
    CHECK_EQ(c_calls, 1);
    CHECK_EQ(tk_loop_cancel(loop, c), -ENOENT);
    int d_calls = 0;
    tk_timer_id d = sched(loop, far, count_fn, &d_calls);
    CHECK(d != c);
    CHECK_EQ(tk_loop_fire(loop, c), -ENOENT);
    CHECK_EQ(tk_loop_cancel(loop, c), -ENOENT);
    CHECK_EQ(d_calls, 0);
    CHECK_EQ(tk_loop_timer_info(loop, d, &info), 0);
    CHECK_EQ(tk_loop_cancel(loop, d), 0);

    /* Many random rounds against a model of the live timers. */
    enum { LIVE_MAX = 48, STALE_MAX = 4096, STEPS = 4000 };
    static tk_timer_id live[LIVE_MAX], stale[STALE_MAX];
    static int64_t live_deadline[LIVE_MAX];
    int nlive = 0, nstale = 0, bad = 0, cross_calls = 0;
    int64_t now = start + 2 * MS;
    for (int step = 0; step < STEPS; step++) {
        uint64_t op = rng_below(&g_rng, 10);
        if (op < 4 && nlive < LIVE_MAX) {
            int64_t delay = MS + (int64_t)rng_below(&g_rng, 1000 * MS);
            tk_timer_spec s = mkspec(TK_CLOCK_MONOTONIC, delay, 0, 0, TK_MODES(0), 0);
            tk_timer_id id = TK_TIMER_NONE;
            if (tk_loop_schedule(loop, &s, count_fn, &cross_calls, &id) != 0) bad++;
            for (int i = 0; i < nlive; i++) bad += live[i] == id;
            for (int i = 0; i < nstale; i++) bad += stale[i] == id; /* never issued twice */
            live[nlive] = id;
            live_deadline[nlive] = now + delay;
            nlive++;
        } else if (op < 7 && nlive > 0) {
            int i = (int)rng_below(&g_rng, (uint64_t)nlive);
            if (tk_loop_cancel(loop, live[i]) != 0) bad++;
            if (tk_loop_cancel(loop, live[i]) != -ENOENT) bad++;
            if (nstale < STALE_MAX) stale[nstale++] = live[i];
            live[i] = live[nlive - 1];
            live_deadline[i] = live_deadline[nlive - 1];
            nlive--;
        } else if (op < 8 && nlive > 0) {
            int i = (int)rng_below(&g_rng, (uint64_t)nlive);
            int64_t delay = MS + (int64_t)rng_below(&g_rng, 1000 * MS);
            tk_timer_spec s = mkspec(TK_CLOCK_MONOTONIC, delay, 0, 0, TK_MODES(0), 0);
            if (tk_loop_reschedule(loop, live[i], &s) != 0) bad++;
            live_deadline[i] = now + delay;
        } else if (op < 9 && nlive > 0) {
            /* fire a live one-shot by hand: it becomes stale */
            int i = (int)rng_below(&g_rng, (uint64_t)nlive);
            int before = cross_calls;
            if (tk_loop_fire(loop, live[i]) != 0 || cross_calls != before + 1) bad++;
            if (nstale < STALE_MAX) stale[nstale++] = live[i];
            live[i] = live[nlive - 1];
            live_deadline[i] = live_deadline[nlive - 1];
            nlive--;
        } else if (nstale > 0) {
            for (int k = 0; k < 8; k++) {
                tk_timer_id h = stale[rng_below(&g_rng, (uint64_t)nstale)];
                tk_timer_spec s = mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0);
                if (tk_loop_cancel(loop, h) != -ENOENT) bad++;
                if (tk_loop_reschedule(loop, h, &s) != -ENOENT) bad++;
                if (tk_loop_fire(loop, h) != -ENOENT) bad++;
                if (tk_loop_timer_info(loop, h, &info) != -ENOENT) bad++;
            }
        }
        if (step % 50 == 0 || step == STEPS - 1) {
            for (int i = 0; i < nlive; i++) {
                if (tk_loop_timer_info(loop, live[i], &info) != 0 ||
                    info.deadline_ns != live_deadline[i])
                    bad++;
            }
            tk_loop_stats st;
            if (tk_loop_get_stats(loop, &st) != 0 || st.pending != (uint64_t)nlive) bad++;
        }
    }
    CHECK_EQ(bad, 0);
    /* Every stale handle, once more. */
    int stale_bad = 0;
    for (int i = 0; i < nstale; i++) {
        if (tk_loop_cancel(loop, stale[i]) != -ENOENT) stale_bad++;
        if (tk_loop_timer_info(loop, stale[i], &info) != -ENOENT) stale_bad++;
    }
    CHECK_EQ(stale_bad, 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_unissued_handles(void) {
    enum { N = 64 };
    tk_loop *loop = new_manual(SEC);
    tk_timer_id ids[N];
    for (int i = 0; i < N; i++) {
        tk_timer_spec s = mkspec((tk_clock)(i % 3), (i + 1) * SEC, (i % 4) ? 0 : SEC, 0,
                                 TK_MODES(i % TK_MODE_COUNT), 0);
        ids[i] = sched(loop, s, count_fn, NULL);
    }
    /* cancel a few so there are free slots with old generations */
    for (int i = 0; i < N; i += 7) CHECK_EQ(tk_loop_cancel(loop, ids[i]), 0);
    tk_timer_id live[N];
    int nlive = 0;
    for (int i = 0; i < N; i++)
        if (i % 7) live[nlive++] = ids[i];
    timer_snap snap;
    snap_take(loop, live, nlive < SNAP_MAX ? nlive : SNAP_MAX, &snap);

    tk_timer_spec good = mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0);
    tk_timer_info info;
    int bad = 0, tried = 0;
    /* Random values, bit flips and neighbours of live handles, extremes. */
    static tk_timer_id probes[20000 + N * 72 + 8];
    int np = 0;
    for (int i = 0; i < 20000; i++) probes[np++] = rng_next(&g_rng);
    for (int i = 0; i < nlive; i++) {
        for (int b = 0; b < 64; b++) probes[np++] = live[i] ^ (1ull << b);
        probes[np++] = live[i] + 1;
        probes[np++] = live[i] - 1;
        probes[np++] = live[i] + (1ull << 32);
        probes[np++] = live[i] - (1ull << 32);
        probes[np++] = live[i] << 1;
        probes[np++] = live[i] >> 1;
        probes[np++] = ~live[i];
        probes[np++] = live[i] | 0xffffffff00000000ull;
    }
    probes[np++] = UINT64_MAX;
    probes[np++] = 1;
    probes[np++] = 0xffffffffull;
    probes[np++] = 0xffffffff00000000ull;
    probes[np++] = 0x8000000000000000ull;
    probes[np++] = 0x100000000ull;
    for (int k = 0; k < np; k++) {
        tk_timer_id h = probes[k];
        int clash = h == TK_TIMER_NONE;
        for (int i = 0; i < nlive && !clash; i++) clash = h == live[i];
        if (clash) continue;
        tried++;
        if (tk_loop_cancel(loop, h) != -ENOENT) bad++;
        if (tk_loop_timer_info(loop, h, &info) != -ENOENT) bad++;
        if (tk_loop_fire(loop, h) != -ENOENT) bad++;
        if (tk_loop_reschedule(loop, h, &good) != -ENOENT) bad++;
    }
    CHECK_GE(tried, 20000);
    CHECK_EQ(bad, 0);
    CHECK_EQ(snap_diff(loop, &snap, 1), 0);
    CHECK_EQ(pending_of(loop), (uint64_t)nlive);
    for (int i = 0; i < nlive; i++) CHECK_EQ(tk_loop_timer_info(loop, live[i], &info), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ------------------------------------------------------------------------
 * Busy loops: destroy / advance from callbacks and other threads
 * ------------------------------------------------------------------------ */

typedef struct busy_probe {
    int destroy_rc;
    int advance_rc;
    int resched_rc;
    int calls;
    int other_thread_advance_rc;
    int other_thread_destroy_rc;
    int use_thread; /* also try advance and destroy from another thread */
    int stop;       /* stop the (real) loop on the second call */
} busy_probe;

static void *busy_other_thread(void *arg) {
    void **a = arg;
    tk_loop *loop = a[0];
    busy_probe *p = a[1];
    p->other_thread_advance_rc = (int)tk_loop_advance(loop, 0, 0);
    p->other_thread_destroy_rc = tk_loop_destroy(loop);
    return NULL;
}

static void busy_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)missed;
    busy_probe *p = ctx;
    p->calls++;
    p->destroy_rc = tk_loop_destroy(loop);
    p->advance_rc = (int)tk_loop_advance(loop, 0, MS);
    /* still usable from here: the timer can be revived */
    tk_timer_spec s = mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0);
    if (p->calls == 1) p->resched_rc = tk_loop_reschedule(loop, id, &s);
    if (p->use_thread) {
        pthread_t t;
        void *args[2] = {loop, p};
        if (pthread_create(&t, NULL, busy_other_thread, args) == 0) pthread_join(t, NULL);
    }
    if (p->calls == 2 && p->stop) tk_loop_stop(loop);
}

static void test_destroy_while_running(void) {
    /* Real loop, from the timer's callback. */
    tk_loop *loop = new_real();
    busy_probe p = {.destroy_rc = 1, .advance_rc = 1, .resched_rc = 1, .stop = 1};
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0), 0), busy_fn, &p);
    CHECK_EQ(tk_loop_run(loop, 0, sys_now(TK_CLOCK_MONOTONIC) + 30 * SEC, 0), TK_RUN_STOPPED);
    CHECK_EQ(p.calls, 2);
    CHECK_EQ(p.destroy_rc, -EBUSY);
    /* both descriptions fit: a real loop, and called from a callback */
    CHECK(p.advance_rc == -ENOTSUP || p.advance_rc == -EBUSY);
    CHECK_EQ(p.resched_rc, 0);
    /* usable afterwards */
    int n = 0;
    sched(loop, mkspec(TK_CLOCK_REALTIME, 0, 0, 0, TK_MODES(0), 0), count_fn, &n);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(n, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);

    /* Manual loop, from a callback of tk_loop_advance, and from another
     * thread while the advance runs. */
    loop = new_manual(SEC);
    busy_probe q = {.destroy_rc = 1, .advance_rc = 1, .resched_rc = 1, .use_thread = 1,
                    .other_thread_advance_rc = 1, .other_thread_destroy_rc = 1};
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0), 0), busy_fn, &q);
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 2);
    CHECK_EQ(q.calls, 2);
    CHECK_EQ(q.destroy_rc, -EBUSY);
    CHECK_EQ(q.advance_rc, -EBUSY);
    CHECK_EQ(q.resched_rc, 0);
    CHECK_EQ(q.other_thread_advance_rc, -EBUSY);
    CHECK_EQ(q.other_thread_destroy_rc, -EBUSY);
    int64_t now = 0;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(now, SEC + 10 * MS);
    n = 0;
    sched(loop, mkspec(TK_CLOCK_BOOTTIME, MS, 0, 0, TK_MODES(0), 0), count_fn, &n);
    CHECK_EQ(tk_loop_advance(loop, 0, MS), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_manual_only(void) {
    tk_loop *real = new_real();
    CHECK_EQ(tk_loop_advance(real, 0, 0), -ENOTSUP);
    CHECK_EQ(tk_loop_advance(real, 0, SEC), -ENOTSUP);
    for (int c = 0; c < TK_CLOCK_COUNT; c++)
        CHECK_EQ(tk_loop_set_manual_time(real, (tk_clock)c, sys_now((tk_clock)c) + SEC), -ENOTSUP);
    CHECK_EQ(tk_loop_destroy(real), 0);

    tk_loop *m = new_manual(5 * SEC);
    int64_t now;
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_MONOTONIC, 5 * SEC - 1), -EINVAL);
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_MONOTONIC, 0), -EINVAL);
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_BOOTTIME, 4 * SEC), -EINVAL);
    CHECK_EQ(tk_loop_now(m, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(now, 5 * SEC);
    CHECK_EQ(tk_loop_now(m, TK_CLOCK_BOOTTIME, &now), 0);
    CHECK_EQ(now, 5 * SEC);
    /* Forward and equal are fine; the wall clock may go back. */
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_MONOTONIC, 5 * SEC), 0);
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_MONOTONIC, 6 * SEC), 0);
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_MONOTONIC, 6 * SEC - 1), -EINVAL);
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_BOOTTIME, 7 * SEC), 0);
    CHECK_EQ(tk_loop_set_manual_time(m, TK_CLOCK_REALTIME, SEC), 0);
    CHECK_EQ(tk_loop_now(m, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(now, 6 * SEC);
    CHECK_EQ(tk_loop_now(m, TK_CLOCK_BOOTTIME, &now), 0);
    CHECK_EQ(now, 7 * SEC);
    CHECK_EQ(tk_loop_now(m, TK_CLOCK_REALTIME, &now), 0);
    CHECK_EQ(now, SEC);
    CHECK_EQ(tk_loop_advance(m, 0, -1), -EINVAL);
    CHECK_EQ(tk_loop_advance(m, TK_MODES(TK_MODE_COUNT), 0), -EINVAL);
    CHECK_EQ(tk_loop_run(m, TK_MODES(TK_MODE_COUNT), TK_FOREVER, TK_RUN_NOWAIT), -EINVAL);
    CHECK_EQ(tk_loop_advance(m, TK_MODES(TK_MODE_COUNT - 1), 0), 0);
    CHECK_EQ(tk_loop_advance(m, 0, 0), 0); /* the empty set: the default mode */
    CHECK_EQ(tk_loop_destroy(m), 0);
}

/* TK_MODES of a mode outside [0, TK_MODE_COUNT) is TK_MODES_INVALID, which
 * schedule, reschedule, run and advance reject (not the empty set, which
 * means the default mode); it is never an out-of-range shift (the modes come
 * through a volatile, so the shift happens at run time, where
 * -fsanitize=shift would see it). */
_Static_assert(TK_MODES(0) == 1u && TK_MODES(30) == 0x40000000u, "TK_MODES in range");
_Static_assert(TK_MODES(31) == TK_MODES_INVALID && TK_MODES(32) == TK_MODES_INVALID &&
                   TK_MODES(-1) == TK_MODES_INVALID && TK_MODES(1LL << 32) == TK_MODES_INVALID,
               "TK_MODES out of range is invalid");
_Static_assert((TK_MODES_ALL & TK_MODES_INVALID) == 0 &&
                   (TK_MODES_ALL | TK_MODES_INVALID) == UINT32_MAX,
               "every mode is in TK_MODES_ALL");

static void test_modes_out_of_range(void) {
    static const long long modes[] = {31, 32, 33, 63, 64, 65, 127, 128, 1000, UINT32_MAX,
                                      -1, -32, INT32_MIN, INT64_MIN, INT64_MAX};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        volatile long long wide_mode = modes[i];
        volatile unsigned unsigned_mode = (unsigned)modes[i];
        volatile int int_mode = (int)modes[i];
        CHECK_EQ(TK_MODES(wide_mode), TK_MODES_INVALID);
        if (unsigned_mode >= TK_MODE_COUNT) CHECK_EQ(TK_MODES(unsigned_mode), TK_MODES_INVALID);
        if ((long long)int_mode == modes[i]) CHECK_EQ(TK_MODES(int_mode), TK_MODES_INVALID);
    }
    for (volatile unsigned mode = 0; mode < TK_MODE_COUNT; mode++) {
        CHECK_EQ(TK_MODES(mode), (tk_mode_set)1u << mode);
    }

    tk_loop *loop = new_manual(0);
    int calls = 0;
    volatile unsigned mode = TK_MODE_COUNT;
    tk_timer_spec bad = mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(mode), 0);
    tk_timer_id id = TK_TIMER_NONE;
    CHECK_EQ(tk_loop_schedule(loop, &bad, count_fn, &calls, &id), -EINVAL);
    CHECK_EQ(id, TK_TIMER_NONE);
    tk_timer_id good = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 10, 0, 0, TK_MODES(0), 0), count_fn,
                             &calls);
    CHECK_EQ(tk_loop_reschedule(loop, good, &bad), -EINVAL);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, good, &info), 0);
    CHECK_EQ(info.modes, TK_MODES(0));
    CHECK_EQ(pending_of(loop), 1);
    CHECK_EQ(tk_loop_advance(loop, 0, 10), 1);
    CHECK_EQ(calls, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ------------------------------------------------------------------------
 * Running out of descriptors
 * ------------------------------------------------------------------------ */

static int set_soft_nofile(rlim_t n) {
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return -1;
    lim.rlim_cur = n;
    return setrlimit(RLIMIT_NOFILE, &lim);
}

static int is_emfile(int rc) { return rc == -EMFILE || rc == -ENFILE; }

static void emfile_child(void) {
    struct rlimit old;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    fd_snap s0, s1;
    fd_snapshot(&s0);
    int maxfd = 0;
    for (int fd = 0; fd < FD_SCAN; fd++)
        if (s0.open[fd]) maxfd = fd;
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max < (rlim_t)maxfd + 4) {
        fprintf(stderr, "  emfile: hard limit too low to test\n");
        CHECK(0);
        return;
    }
    /* No room at all: limit at what is open, gaps below filled. */
    CHECK_EQ(set_soft_nofile((rlim_t)maxfd + 1), 0);
    int fillers[FD_SCAN];
    int nfill = 0, fd;
    while (nfill < FD_SCAN && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) fillers[nfill++] = fd;
    CHECK_EQ(errno, EMFILE);
    fd_snapshot(&s0);

    tk_loop *loop = NULL;
    CHECK(is_emfile(tk_loop_create(&loop)));
    fd_snapshot(&s1);
    CHECK_EQ(fd_snap_diff(&s0, &s1), 0);

    /* Room for one: the epoll instance fits, the eventfd does not. */
    CHECK_EQ(set_soft_nofile((rlim_t)maxfd + 2), 0);
    loop = NULL;
    CHECK(is_emfile(tk_loop_create(&loop)));
    fd_snapshot(&s1);
    CHECK_EQ(fd_snap_diff(&s0, &s1), 0);
    CHECK_EQ(fcntl(maxfd + 1, F_GETFD), -1); /* the free slot is still free */

    /* Room for two: the loop fits, a clock's timerfd does not. */
    CHECK_EQ(set_soft_nofile((rlim_t)maxfd + 3), 0);
    loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    if (loop) {
        int calls = 0;
        tk_timer_spec s = mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0), 0);
        tk_timer_id id = TK_TIMER_NONE;
        CHECK(is_emfile(tk_loop_schedule(loop, &s, count_fn, &calls, &id)));
        CHECK_EQ(pending_of(loop), 0);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
        CHECK_EQ(calls, 0);
        /* A clock-change handler needs the wall clock's timerfd; clearing
         * one needs nothing, so it succeeds with no room left. */
        int changes = 0;
        CHECK(is_emfile(tk_loop_set_clock_change_handler(loop, change_count_fn, &changes)));
        CHECK_EQ(tk_loop_set_clock_change_handler(loop, NULL, NULL), 0);
        /* Room for three: now it can be scheduled and fires. */
        CHECK_EQ(set_soft_nofile((rlim_t)maxfd + 4), 0);
        CHECK_EQ(tk_loop_schedule(loop, &s, count_fn, &calls, &id), 0);
        CHECK_EQ(pending_of(loop), 1);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
        CHECK_EQ(calls, 1);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
    fd_snapshot(&s1);
    CHECK_EQ(fd_snap_diff(&s0, &s1), 0);

    for (int i = 0; i < nfill; i++) close(fillers[i]);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void test_emfile(void) {
    int pfd[2];
    CHECK_EQ(pipe(pfd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        CHECK(0);
        return;
    }
    if (pid == 0) {
        close(pfd[0]);
        atomic_store(&g_passed, 0);
        atomic_store(&g_failed, 0);
        emfile_child();
        int counts[2] = {atomic_load(&g_passed), atomic_load(&g_failed)};
        ssize_t w = write(pfd[1], counts, sizeof counts);
        close(pfd[1]);
        fflush(stderr);
        /* exit(), not _exit(): the leak check runs at exit */
        exit(w == (ssize_t)sizeof counts && counts[1] == 0 ? 0 : 1);
    }
    close(pfd[1]);
    int counts[2] = {0, 0};
    ssize_t r = read(pfd[0], counts, sizeof counts);
    close(pfd[0]);
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_EQ(r, (ssize_t)sizeof counts);
    atomic_fetch_add(&g_passed, counts[0]);
    atomic_fetch_add(&g_failed, counts[1]);
    /* A crash or a leak report makes the child's exit status non-zero. */
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && counts[1] == 0)
        fprintf(stderr, "  emfile child: status %#x (crash or leak)\n", status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ------------------------------------------------------------------------
 * Destroying loops full of timers and watches
 * ------------------------------------------------------------------------ */

static void fill_loop(tk_loop *loop, int n, int *calls) {
    int64_t now = 0;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_REALTIME, &now), 0);
    int failures = 0;
    for (int i = 0; i < n; i++) {
        tk_clock c = (tk_clock)rng_below(&g_rng, TK_CLOCK_COUNT);
        int64_t delay = 3600 * SEC + (int64_t)rng_below(&g_rng, 86400 * SEC);
        int64_t interval = rng_below(&g_rng, 4) == 0 ? (int64_t)rng_below(&g_rng, 10 * SEC) + 1 : 0;
        int64_t leeway = (int64_t)rng_below(&g_rng, SEC);
        tk_mode_set modes = ((tk_mode_set)rng_next(&g_rng) & TK_MODES_ALL) | 1u;
        uint32_t flags = 0;
        if (c == TK_CLOCK_REALTIME && (i & 1)) {
            delay += now;
            flags = TK_TIMER_ABSOLUTE;
        }
        tk_timer_spec s = mkspec(c, delay, interval, leeway, modes, flags);
        tk_timer_id id;
        if (tk_loop_schedule(loop, &s, count_fn, calls, &id) != 0) failures++;
        else if (i % 10 == 0 && tk_loop_cancel(loop, id) != 0) failures++; /* holes */
    }
    CHECK_EQ(failures, 0);
}

static void test_destroy_full(void) {
    enum { N = 100000, PIPES = 8 };
    fd_snap before, after;
    int pipes[PIPES][2];
    for (int i = 0; i < PIPES; i++) CHECK_EQ(pipe(pipes[i]), 0);
    fd_snapshot(&before);

    int calls = 0, changes = 0, io_calls = 0;
    tk_loop *loop = new_real();
    for (int c = 0; c < TK_CLOCK_COUNT; c++) CHECK_EQ(tk_loop_reserve(loop, (tk_clock)c, 1000), 0);
    fill_loop(loop, N, &calls);
    CHECK_EQ(pending_of(loop), (uint64_t)(N - N / 10));
    for (int i = 0; i < PIPES; i++) {
        CHECK_EQ(tk_loop_watch_fd(loop, pipes[i][0], TK_IO_READABLE, io_count_fn, &io_calls), 0);
        CHECK_EQ(tk_loop_watch_fd(loop, pipes[i][1], TK_IO_WRITABLE, io_count_fn, &io_calls), 0);
    }
    CHECK_EQ(tk_loop_set_clock_change_handler(loop, change_count_fn, &changes), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    int io_after_run = io_calls;
    CHECK_GE(io_after_run, PIPES); /* the write ends are writable */
    CHECK_EQ(tk_loop_destroy(loop), 0);
    CHECK_EQ(calls, 0); /* dropped without callbacks */
    CHECK_EQ(io_calls, io_after_run);
    fd_snapshot(&after);
    CHECK_EQ(fd_snap_diff(&before, &after), 0);

    /* A manual loop with as many. */
    tk_loop *m = new_manual(1000 * SEC);
    fill_loop(m, N, &calls);
    for (int i = 0; i < PIPES; i++)
        CHECK_EQ(tk_loop_watch_fd(m, pipes[i][0], TK_IO_READABLE, io_count_fn, &io_calls), 0);
    CHECK_EQ(tk_loop_destroy(m), 0);
    CHECK_EQ(calls, 0);
    fd_snapshot(&after);
    CHECK_EQ(fd_snap_diff(&before, &after), 0);

    /* A loop that ran timers and had its table grown and emptied. */
    loop = new_real();
    int fired = 0;
    for (int i = 0; i < 5000; i++)
        sched(loop, mkspec((tk_clock)(i % 3), 0, 0, 0, TK_MODES(0), 0), count_fn, &fired);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(fired, 5000);
    fill_loop(loop, 20000, &calls);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    CHECK_EQ(calls, 0);

    for (int i = 0; i < PIPES; i++) {
        close(pipes[i][0]);
        close(pipes[i][1]);
    }
}

/* ------------------------------------------------------------------------
 * Saturation at INT64_MAX
 * ------------------------------------------------------------------------ */

typedef struct sat_rec {
    int count;
    uint64_t missed[8];
} sat_rec;

static void sat_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id;
    sat_rec *r = ctx;
    if (r->count < 8) r->missed[r->count] = missed;
    r->count++;
}

static int64_t info_deadline(tk_loop *loop, tk_timer_id id) {
    tk_timer_info info;
    if (tk_loop_timer_info(loop, id, &info) != 0) return INT64_MIN;
    return info.deadline_ns;
}

static void test_saturation_manual(void) {
    const int64_t S = 1000 * SEC;
    tk_loop *loop = new_manual(S);
    sat_rec never = {0};
    tk_timer_info info;
    /* Never come: relative INT64_MAX, absolute INT64_MAX, relative that
     * overflows now + delay. */
    tk_timer_id a = sched(loop, mkspec(TK_CLOCK_MONOTONIC, INT64_MAX, 0, 0, TK_MODES(0), 0), sat_fn,
                          &never);
    tk_timer_id b = sched(loop, mkspec(TK_CLOCK_REALTIME, INT64_MAX, 0, 0, TK_MODES(0),
                                       TK_TIMER_ABSOLUTE),
                          sat_fn, &never);
    tk_timer_id c = sched(loop, mkspec(TK_CLOCK_BOOTTIME, INT64_MAX, INT64_MAX, INT64_MAX,
                                       TK_MODES(0), 0),
                          sat_fn, &never);
    tk_timer_id f = sched(loop, mkspec(TK_CLOCK_MONOTONIC, INT64_MAX - 5, 0, INT64_MAX - 7,
                                       TK_MODES(0), 0),
                          sat_fn, &never);
    CHECK_EQ(info_deadline(loop, a), INT64_MAX);
    CHECK_EQ(info_deadline(loop, b), INT64_MAX);
    CHECK_EQ(info_deadline(loop, c), INT64_MAX);
    CHECK_EQ(info_deadline(loop, f), INT64_MAX);
    CHECK_EQ(tk_loop_timer_info(loop, c, &info), 0);
    CHECK_EQ(info.leeway_ns, INT64_MAX / 2);
    CHECK_EQ(info.interval_ns, INT64_MAX);

    /* A negative relative deadline counts as 0, INT64_MIN included. */
    sat_rec h = {0};
    tk_timer_id hid = sched(loop, mkspec(TK_CLOCK_MONOTONIC, INT64_MIN, 0, 0, TK_MODES(0), 0),
                            sat_fn, &h);
    CHECK_EQ(info_deadline(loop, hid), S);
    /* Near deadlines with saturating leeway / interval. */
    sat_rec g = {0}, k = {0};
    tk_timer_id gid = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 10, 0, INT64_MAX, TK_MODES(0), 0),
                            sat_fn, &g);
    tk_timer_id kid = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 1000, INT64_MAX, 0, TK_MODES(0), 0),
                            sat_fn, &k);
    /* Repeating timers just below INT64_MAX. */
    sat_rec d = {0}, e = {0};
    tk_timer_id did = sched(loop, mkspec(TK_CLOCK_MONOTONIC, INT64_MAX - 10, INT64_MAX / 2, 0,
                                         TK_MODES(0), TK_TIMER_ABSOLUTE),
                            sat_fn, &d);
    tk_timer_id eid = sched(loop, mkspec(TK_CLOCK_MONOTONIC, INT64_MAX - 3, 1, 0, TK_MODES(0),
                                         TK_TIMER_ABSOLUTE),
                            sat_fn, &e);
    CHECK_EQ(tk_loop_timer_info(loop, eid, &info), 0);
    CHECK_EQ(info.leeway_ns, 0); /* 1 / 2 */

    CHECK_EQ(tk_loop_advance(loop, 0, 0), 1);
    CHECK_EQ(h.count, 1);
    /* k fires at S + 1000 (g, due since S + 10, goes along at the latest
     * there); k's next deadline saturates. */
    CHECK_EQ(tk_loop_advance(loop, 0, 2000), 2);
    CHECK_EQ(k.count, 1);
    CHECK_EQ(k.missed[0], 0);
    CHECK_EQ(g.count, 1);
    CHECK_EQ(info_deadline(loop, kid), INT64_MAX);
    CHECK_EQ(tk_loop_timer_info(loop, gid, &info), -ENOENT);

    int64_t now = 0;
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, INT64_MAX - 5 - now), 1);
    CHECK_EQ(d.count, 1);
    CHECK_EQ(d.missed[0], 0);
    CHECK_EQ(info_deadline(loop, did), INT64_MAX);
    CHECK_EQ(e.count, 0);
    /* e fires at INT64_MAX - 3 and - 2 (interval 1), then at - 1. */
    CHECK_EQ(tk_loop_advance(loop, 0, 3), 2);
    CHECK_EQ(e.count, 2);
    CHECK_EQ(info_deadline(loop, eid), INT64_MAX - 1);
    CHECK_EQ(tk_loop_advance(loop, 0, 1), 1);
    CHECK_EQ(e.count, 3);
    CHECK_EQ(info_deadline(loop, eid), INT64_MAX);
    for (int i = 0; i < 3 && i < e.count; i++) CHECK_EQ(e.missed[i], 0);
    /* To the end of time, and past it: nothing at INT64_MAX ever fires. */
    CHECK_EQ(tk_loop_advance(loop, 0, INT64_MAX), 0);
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(now, INT64_MAX);
    CHECK_EQ(tk_loop_now(loop, TK_CLOCK_REALTIME, &now), 0);
    CHECK_EQ(now, INT64_MAX);
    CHECK_EQ(tk_loop_advance(loop, 0, INT64_MAX), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 0), 0);
    CHECK_EQ(never.count, 0);
    CHECK_EQ(d.count, 1);
    CHECK_EQ(e.count, 3);
    CHECK_EQ(k.count, 1);
    CHECK_EQ(pending_of(loop), 7);
    /* Scheduling at the end of time saturates too. */
    sat_rec late = {0};
    tk_timer_id lid = sched(loop, mkspec(TK_CLOCK_REALTIME, 1, 1, 1, TK_MODES(0), 0), sat_fn, &late);
    CHECK_EQ(info_deadline(loop, lid), INT64_MAX);
    CHECK_EQ(tk_loop_advance(loop, 0, 1), 0);
    CHECK_EQ(late.count, 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);

    /* A loop that starts near the end. */
    loop = new_manual(INT64_MAX - 100);
    sat_rec r = {0};
    tk_timer_id rid = sched(loop, mkspec(TK_CLOCK_BOOTTIME, 1000, 0, 0, TK_MODES(0), 0), sat_fn, &r);
    CHECK_EQ(info_deadline(loop, rid), INT64_MAX);
    tk_timer_id rid2 = sched(loop, mkspec(TK_CLOCK_BOOTTIME, 50, 100, 1000, TK_MODES(0), 0), sat_fn,
                             &r);
    CHECK_EQ(tk_loop_timer_info(loop, rid2, &info), 0);
    CHECK_EQ(info.deadline_ns, INT64_MAX - 50);
    CHECK_EQ(info.leeway_ns, 50); /* clamped to 100 / 2 */
    /* Past its deadline (its wake-up, deadline + leeway, is INT64_MAX); a
     * pass at the current time fires it, and its next deadline saturates. */
    CHECK_EQ(tk_loop_advance(loop, 0, 60), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 0), 1);
    CHECK_EQ(r.count, 1);
    CHECK_EQ(info_deadline(loop, rid2), INT64_MAX); /* -50 + 100 saturates */
    /* Neither rid nor rid2 (both at INT64_MAX now) ever fires. */
    CHECK_EQ(tk_loop_advance(loop, 0, 1000), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 0), 0);
    CHECK_EQ(r.count, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* The longest span, INT64_MAX ns, reaches a timer due at its very end (the
 * distance to it is the span itself, not "no wake-up"), and only there: one
 * a nanosecond further waits for the next advance. */
static void test_longest_span_reaches_its_end(void) {
    tk_loop_stats stats;
    int64_t now = 0;
    for (int further = 0; further <= 1; further++) {
        tk_loop *loop = new_manual(-1 - further);
        sat_rec r = {0};
        tk_timer_id id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, INT64_MAX - 1, 0, 0, TK_MODES(0),
                                            TK_TIMER_ABSOLUTE),
                               sat_fn, &r);
        CHECK_EQ(tk_loop_advance(loop, 0, INT64_MAX), further ? 0 : 1);
        CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
        CHECK_EQ(now, INT64_MAX - 1 - further);
        CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
        CHECK_EQ(stats.wakeups, further ? 0 : 1);
        CHECK_EQ(r.count, further ? 0 : 1);
        CHECK_EQ(tk_loop_advance(loop, 0, 1), further ? 1 : 0);
        CHECK_EQ(r.count, 1);
        CHECK_EQ(tk_loop_timer_info(loop, id, &(tk_timer_info){0}), -ENOENT);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
    /* A run with a deadline moves time as an advance does, also over a span
     * longer than INT64_MAX ns: a wake-up exactly INT64_MAX ns ahead is one
     * (from -2, at INT64_MAX - 2), and one past INT64_MAX ns ahead (from
     * -10, at INT64_MAX - 5) comes before the deadline all the same. */
    for (int longer = 0; longer <= 1; longer++) {
        int64_t start = longer ? -10 : -2;
        tk_loop *loop = new_manual(start);
        sat_rec r = {0};
        sched(loop, mkspec(TK_CLOCK_MONOTONIC, longer ? INT64_MAX - 5 : INT64_MAX - 2, 0, 0,
                           TK_MODES(0), TK_TIMER_ABSOLUTE),
              sat_fn, &r);
        CHECK_EQ(tk_loop_run(loop, 0, INT64_MAX - 1, 0), TK_RUN_TIMED_OUT);
        CHECK_EQ(r.count, 1);
        CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
        CHECK_EQ(now, INT64_MAX - 1);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
}

static void test_saturation_real(void) {
    tk_loop *loop = new_real();
    sat_rec never = {0};
    for (int c = 0; c < TK_CLOCK_COUNT; c++) {
        tk_clock clock = (tk_clock)c;
        tk_timer_id ids[5];
        ids[0] = sched(loop, mkspec(clock, INT64_MAX, 0, 0, TK_MODES(0), 0), sat_fn, &never);
        ids[1] = sched(loop, mkspec(clock, INT64_MAX, 0, 0, TK_MODES(0), TK_TIMER_ABSOLUTE), sat_fn,
                       &never);
        ids[2] = sched(loop, mkspec(clock, INT64_MAX, INT64_MAX, INT64_MAX, TK_MODES(0), 0), sat_fn,
                       &never);
        ids[3] = sched(loop, mkspec(clock, INT64_MAX - 1, 1, 0, TK_MODES(0), TK_TIMER_ABSOLUTE),
                       sat_fn, &never);
        ids[4] = sched(loop, mkspec(clock, INT64_MAX - 1, 0, INT64_MAX, TK_MODES(0), 0), sat_fn,
                       &never);
        CHECK_EQ(info_deadline(loop, ids[0]), INT64_MAX);
        CHECK_EQ(info_deadline(loop, ids[1]), INT64_MAX);
        CHECK_EQ(info_deadline(loop, ids[2]), INT64_MAX);
        CHECK_EQ(info_deadline(loop, ids[3]), INT64_MAX - 1);
        CHECK_EQ(info_deadline(loop, ids[4]), INT64_MAX);
    }
    int64_t until = sys_now(TK_CLOCK_MONOTONIC) + 50 * MS;
    CHECK_EQ(tk_loop_run(loop, 0, until, 0), TK_RUN_TIMED_OUT);
    CHECK_GE(sys_now(TK_CLOCK_MONOTONIC), until);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(never.count, 0);
    CHECK_EQ(pending_of(loop), 15);
    /* A near timer still fires among them. */
    sat_rec near = {0};
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, MS, 0, 0, TK_MODES(0), 0), sat_fn, &near);
    CHECK_EQ(tk_loop_run(loop, 0, sys_now(TK_CLOCK_MONOTONIC) + 30 * SEC, TK_RUN_ONCE),
             TK_RUN_PASSED);
    CHECK_EQ(near.count, 1);
    CHECK_EQ(never.count, 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ------------------------------------------------------------------------
 * Descriptors
 * ------------------------------------------------------------------------ */

static void test_watch_errors(void) {
    tk_loop *loops[2] = {new_real(), new_manual(0)};
    for (int l = 0; l < 2; l++) {
        tk_loop *loop = loops[l];
        int n = 0;
        CHECK(tk_loop_watch_fd(loop, -1, TK_IO_READABLE, io_count_fn, &n) < 0);
        CHECK(tk_loop_watch_fd(loop, INT32_MAX, TK_IO_READABLE, io_count_fn, &n) < 0);
        FILE *f = tmpfile();
        CHECK(f != NULL);
        if (f) {
            CHECK_EQ(tk_loop_watch_fd(loop, fileno(f), TK_IO_READABLE, io_count_fn, &n), -EPERM);
            CHECK_EQ(tk_loop_unwatch_fd(loop, fileno(f)), -ENOENT);
            fclose(f);
        }
        int p[2];
        CHECK_EQ(pipe(p), 0);
        CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), -ENOENT);
        CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_count_fn, &n), 0);
        CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_count_fn, &n), 0); /* replace */
        CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), 0);
        CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), -ENOENT);
        int closed = p[1];
        close(p[1]);
        CHECK_EQ(tk_loop_watch_fd(loop, closed, TK_IO_WRITABLE, io_count_fn, &n), -EBADF);
        CHECK_EQ(tk_loop_unwatch_fd(loop, closed), -ENOENT);
        close(p[0]);
        CHECK_EQ(n, 0);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
}

/* ------------------------------------------------------------------------
 * Main
 * ------------------------------------------------------------------------ */

/* The easy mistakes of API version 1 fail or do the obvious thing: a
 * zero-initialised spec is a one-shot due now in the default mode; a time in
 * the field the flags do not name is -EINVAL, whichever way round; a run
 * takes its mode as a set, like a timer, and the empty set is the default. */
static void test_api_pairs(void) {
    tk_loop *loop = new_manual(5 * SEC);
    int calls = 0;
    tk_timer_spec zero = {0};
    tk_timer_id id = sched(loop, zero, count_fn, &calls);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(info.modes, TK_MODES(TK_MODE_DEFAULT));
    CHECK_EQ(info.deadline_ns, 5 * SEC);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(1), 0), 0); /* not its mode */
    CHECK_EQ(tk_loop_advance(loop, 0, 0), 1);            /* the empty set: the default */
    CHECK_EQ(calls, 1);

    /* Version-1 code that put a relative time in deadline_ns. */
    tk_timer_spec old = {.clock = TK_CLOCK_MONOTONIC, .deadline_ns = 10 * MS};
    CHECK_EQ(tk_loop_schedule(loop, &old, count_fn, &calls, &id), -EINVAL);
    tk_timer_spec mixed = {.delay_ns = 10 * MS, .deadline_ns = 6 * SEC, .flags = TK_TIMER_ABSOLUTE};
    CHECK_EQ(tk_loop_schedule(loop, &mixed, count_fn, &calls, &id), -EINVAL);
    tk_timer_spec in_10ms = {.delay_ns = 10 * MS};
    tk_timer_spec at_6s = {.deadline_ns = 6 * SEC, .flags = TK_TIMER_ABSOLUTE};
    tk_timer_id a = sched(loop, in_10ms, count_fn, &calls);
    tk_timer_id b = sched(loop, at_6s, count_fn, &calls);
    CHECK_EQ(tk_loop_timer_info(loop, a, &info), 0);
    CHECK_EQ(info.deadline_ns, 5 * SEC + 10 * MS);
    CHECK_EQ(tk_loop_timer_info(loop, b, &info), 0);
    CHECK_EQ(info.deadline_ns, 6 * SEC);
    CHECK_EQ(tk_loop_reschedule(loop, a, &old), -EINVAL);
    CHECK_EQ(tk_loop_timer_info(loop, a, &info), 0);
    CHECK_EQ(info.deadline_ns, 5 * SEC + 10 * MS); /* unchanged */

    /* Modes: a set of one to run in; several, or an index out of range, no. */
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(0) | TK_MODES(1), SEC), -EINVAL);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(0) | TK_MODES(2), TK_FOREVER, TK_RUN_NOWAIT), -EINVAL);
    tk_timer_spec bad_mode = {.delay_ns = MS, .modes = TK_MODES(TK_MODE_COUNT)};
    CHECK_EQ(tk_loop_schedule(loop, &bad_mode, count_fn, &calls, &id), -EINVAL);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(TK_MODE_DEFAULT), SEC), 2);
    CHECK_EQ(calls, 3);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* What a callback asks of tk_loop_reschedule with TK_TIMER_KEEP_DEADLINE,
 * from inside the timer's own callback. */
typedef struct keep_probe {
    int calls;
    int result;
    int64_t interval;
} keep_probe;

static void keep_probe_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)missed;
    keep_probe *probe = ctx;
    probe->calls++;
    tk_timer_spec keep = {.interval_ns = probe->interval, .flags = TK_TIMER_KEEP_DEADLINE};
    probe->result = tk_loop_reschedule(loop, id, &keep);
}

/* TK_TIMER_KEEP_DEADLINE: reschedule keeps the next deadline and changes the
 * rest, in one step; what it cannot mean is refused, and leaves the timer as
 * it was. */
static void test_keep_deadline(void) {
    tk_loop *loop = new_manual(5 * SEC);
    int calls = 0;
    tk_timer_spec every_10ms = {.delay_ns = 10 * MS, .interval_ns = 10 * MS};
    tk_timer_id id = sched(loop, every_10ms, count_fn, &calls);
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 1); /* fires at 5.010 s; next 5.020 s */
    CHECK_EQ(calls, 1);

    tk_timer_spec keep = {.interval_ns = 3 * MS, .leeway_ns = MS, .modes = TK_MODES(1) | TK_MODES(0),
                          .flags = TK_TIMER_KEEP_DEADLINE};
    CHECK_EQ(tk_loop_reschedule(loop, id, &keep), 0);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(info.deadline_ns, 5 * SEC + 20 * MS);
    CHECK_EQ(info.interval_ns, 3 * MS);
    CHECK_EQ(info.leeway_ns, MS);
    CHECK_EQ(info.modes, TK_MODES(1) | TK_MODES(0));

    /* Refused, the timer unchanged: a first fire given as well, another
     * clock, and a new timer, which has no deadline to keep. */
    tk_timer_spec bad[] = {
        {.interval_ns = MS, .flags = TK_TIMER_KEEP_DEADLINE | TK_TIMER_ABSOLUTE},
        {.delay_ns = MS, .flags = TK_TIMER_KEEP_DEADLINE},
        {.deadline_ns = 6 * SEC, .flags = TK_TIMER_KEEP_DEADLINE},
        {.clock = TK_CLOCK_BOOTTIME, .interval_ns = MS, .flags = TK_TIMER_KEEP_DEADLINE},
        {.interval_ns = MS, .flags = TK_TIMER_KEEP_DEADLINE | 0x10u},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(tk_loop_reschedule(loop, id, &bad[i]), -EINVAL);
        CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
        CHECK_EQ(info.deadline_ns, 5 * SEC + 20 * MS);
        CHECK_EQ(info.interval_ns, 3 * MS);
    }
    tk_timer_id other = TK_TIMER_NONE;
    tk_timer_spec keep_new = {.flags = TK_TIMER_KEEP_DEADLINE};
    CHECK_EQ(tk_loop_schedule(loop, &keep_new, count_fn, &calls, &other), -EINVAL);
    tk_timer_record record = TK_TIMER_RECORD_INIT;
    CHECK_EQ(tk_loop_schedule_record(loop, &record, &keep_new, count_fn, &calls, &other), -EINVAL);
    CHECK_EQ(other, TK_TIMER_NONE);
    CHECK_EQ(tk_loop_reschedule(loop, TK_TIMER_NONE, &keep), -ENOENT);

    /* The pattern the flag replaces: the deadline read, a fire in between
     * (the loop's thread, in a real loop), and the deadline given back as an
     * absolute first fire puts the timer on a deadline it has fired for. */
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 11 * MS), 1); /* due 5.020 s, 1 ms leeway */
    CHECK_EQ(calls, 2);
    tk_timer_spec back = {.deadline_ns = info.deadline_ns, .interval_ns = 3 * MS, .flags = TK_TIMER_ABSOLUTE};
    CHECK_EQ(tk_loop_reschedule(loop, id, &back), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 0), 1); /* 5.020 s again, at 5.021 s */
    CHECK_EQ(calls, 3);
    CHECK_EQ(tk_loop_cancel(loop, id), 0);

    /* From its own callback: a repeating timer keeps the deadline after the
     * one that fired; a one-shot has none left. */
    keep_probe repeating = {.interval = 7 * MS};
    tk_timer_spec every_5ms = {.delay_ns = 5 * MS, .interval_ns = 5 * MS};
    id = sched(loop, every_5ms, keep_probe_fn, &repeating);
    CHECK_EQ(tk_loop_advance(loop, 0, 5 * MS), 1); /* 5.026 s */
    CHECK_EQ(repeating.result, 0);
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(info.deadline_ns, 5 * SEC + 31 * MS);
    CHECK_EQ(info.interval_ns, 7 * MS);
    CHECK_EQ(tk_loop_cancel(loop, id), 0);
    keep_probe once = {.interval = 0};
    tk_timer_spec in_1ms = {.delay_ns = MS};
    id = sched(loop, in_1ms, keep_probe_fn, &once);
    CHECK_EQ(tk_loop_advance(loop, 0, MS), 1);
    CHECK_EQ(once.calls, 1);
    CHECK_EQ(once.result, -ENOENT);
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), -ENOENT); /* done */
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A handle belongs to its loop: every loop hands out the same first slot,
 * but another loop's handle names nothing here, and touches nothing. */
static void test_foreign_handles(void) {
    tk_loop *a = new_manual(0), *b = new_manual(0);
    tk_timer_spec spec = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000, .modes = TK_MODES(0)};
    tk_timer_id in_a[8], in_b[8];
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(tk_loop_schedule(a, &spec, count_fn, NULL, &in_a[i]), 0);
        CHECK_EQ(tk_loop_schedule(b, &spec, count_fn, NULL, &in_b[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        CHECK(in_a[i] != in_b[i]);
        tk_timer_info info;
        CHECK_EQ(tk_loop_timer_info(b, in_a[i], &info), -ENOENT);
        CHECK_EQ(tk_loop_reschedule(b, in_a[i], &spec), -ENOENT);
        CHECK_EQ(tk_loop_fire(b, in_a[i]), -ENOENT);
        CHECK_EQ(tk_loop_cancel(b, in_a[i]), -ENOENT);
        CHECK_EQ(tk_loop_cancel(a, in_b[i]), -ENOENT);
    }
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(a, &stats), 0);
    CHECK_EQ(stats.pending, 8);
    CHECK_EQ(tk_loop_get_stats(b, &stats), 0);
    CHECK_EQ(stats.pending, 8);
    for (int i = 0; i < 8; i++) CHECK_EQ(tk_loop_cancel(a, in_a[i]), 0);
    CHECK_EQ(tk_loop_get_stats(b, &stats), 0);
    CHECK_EQ(stats.pending, 8);
    CHECK_EQ(tk_loop_destroy(a), 0);
    CHECK_EQ(tk_loop_destroy(b), 0);
}

/* x's distance from 0 around the circle of 2^32. */
static uint32_t around(uint32_t x) { return x <= UINT32_C(0x80000000) ? x : 0u - x; }

/* How close the keys of two of the first `loops` loops a process creates
 * come, and how many loops apart the closest two are. */
static uint32_t closest_keys(uint32_t loops, uint32_t *apart) {
    uint32_t closest = UINT32_MAX;
    for (uint32_t d = 1; d < loops; d++) {
        uint32_t distance = around(d * TK__HANDLE_KEY_STEP);
        if (distance < closest) closest = distance, *apart = d;
    }
    return closest;
}

/* Makes `a`, then `apart` - 1 loops it destroys, then `b`: b's key is
 * `apart` steps after a's. */
static void loops_apart(uint32_t apart, tk_loop **a, tk_loop **b) {
    *a = new_manual(0);
    int made = 1;
    for (uint32_t i = 1; i < apart; i++) {
        tk_loop *between = NULL;
        made &= tk_loop_create_manual(&between, 0) == 0 && tk_loop_destroy(between) == 0;
    }
    CHECK(made);
    *b = new_manual(0);
}

/* `from` reuses one slot `reuses` times while `to` holds one timer: every
 * handle `from` gives is refused by `to`. The handles are kept in `handles`.
 * Returns how many `to` took. */
static long reuse_one_slot(tk_loop *from, tk_loop *to, long reuses, tk_timer_id *handles) {
    tk_timer_spec spec = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000};
    long taken = 0;
    for (long i = 0; i < reuses; i++) {
        tk_timer_id id;
        if (tk_loop_schedule(from, &spec, count_fn, NULL, &id) != 0) return -1;
        handles[i] = id;
        tk_timer_info info;
        taken += tk_loop_timer_info(to, id, &info) != -ENOENT;
        if (tk_loop_cancel(from, id) != 0) return -1;
    }
    return taken;
}

/* How many of `handles` `loop` takes. */
static long taken_by(tk_loop *loop, const tk_timer_id *handles, long count) {
    long taken = 0;
    for (long i = 0; i < count; i++) {
        tk_timer_info info;
        taken += tk_loop_timer_info(loop, handles[i], &info) != -ENOENT;
    }
    return taken;
}

/* The header's bound on foreign handles, at the two loops whose keys come
 * closest among the first 4,096: with both tables past the bound, and a slot
 * of each reused past it, neither takes a handle of the other. And the
 * case an outside user found with the keys mixed in by XOR: loops 10,946
 * apart, where one slot reused 170,034 times gave handles the other loop
 * took, and cancelled its timer. */
static void test_foreign_handles_far_apart(void) {
    uint32_t apart4k = 0, apart64k = 0;
    uint32_t bound = closest_keys(4096, &apart4k);
    CHECK_EQ(bound, 744616); /* the header's figures */
    CHECK_EQ(closest_keys(65536, &apart64k), 52777);
    const struct { uint32_t apart; long reuses, timers; } cases[] = {
        {apart4k, bound + 2L, bound + 2L},
        {10946, 170034 + 2L, 64},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        long reuses = cases[c].reuses;
        tk_timer_id *from_a = malloc((size_t)reuses * sizeof *from_a);
        tk_timer_id *from_b = malloc((size_t)reuses * sizeof *from_b);
        tk_timer_id *held_a = malloc((size_t)cases[c].timers * sizeof *held_a);
        tk_timer_id *held_b = malloc((size_t)cases[c].timers * sizeof *held_b);
        CHECK(from_a && from_b && held_a && held_b);
        if (!(from_a && from_b && held_a && held_b)) exit(1);
        tk_loop *a, *b;
        loops_apart(cases[c].apart, &a, &b);
        tk_timer_spec spec = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000};
        /* Each reuses a slot while the other holds a timer in its first. */
        tk_timer_id first_b, first_a;
        CHECK_EQ(tk_loop_schedule(b, &spec, count_fn, NULL, &first_b), 0);
        CHECK_EQ(reuse_one_slot(a, b, reuses, from_a), 0);
        CHECK_EQ(tk_loop_cancel(b, first_b), 0);
        CHECK_EQ(tk_loop_schedule(a, &spec, count_fn, NULL, &first_a), 0);
        CHECK_EQ(reuse_one_slot(b, a, reuses, from_b), 0);
        CHECK_EQ(tk_loop_cancel(a, first_a), 0);
        /* Both tables grow past the bound; no old or new handle crosses. */
        int scheduled = 1;
        for (long i = 0; i < cases[c].timers; i++) {
            scheduled &= tk_loop_schedule(a, &spec, count_fn, NULL, &held_a[i]) == 0;
            scheduled &= tk_loop_schedule(b, &spec, count_fn, NULL, &held_b[i]) == 0;
        }
        CHECK(scheduled);
        CHECK_EQ(taken_by(b, from_a, reuses), 0);
        CHECK_EQ(taken_by(a, from_b, reuses), 0);
        CHECK_EQ(taken_by(b, held_a, cases[c].timers), 0);
        CHECK_EQ(taken_by(a, held_b, cases[c].timers), 0);
        CHECK_EQ(taken_by(a, held_a, cases[c].timers), cases[c].timers);
        CHECK_EQ(taken_by(b, held_b, cases[c].timers), cases[c].timers);
        CHECK_EQ(tk_loop_destroy(a), 0);
        CHECK_EQ(tk_loop_destroy(b), 0);
        free(from_a), free(from_b), free(held_a), free(held_b);
    }
}

/* A repeating timer's callback that cancels its own timer: the slot is
 * free again, and the next timer to take it moves its generation on once,
 * as after any other end of a timer. */
static void cancel_self_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)missed, (void)ctx;
    if (tk_loop_cancel(loop, id) != 0) abort();
}

/* The slot `id` names on `loop` (white box: the key is the loop's). */
static uint32_t slot_on(const tk_loop *loop, tk_timer_id id) {
    return (uint32_t)id - 1u - loop->handle_key;
}

/* The header's bound is exact, at the two closest keys among the first
 * 4,096 loops: a handle of one loop names a timer of the other only once
 * that timer's slot is past the bound and has been reused as often. Each
 * reuse here is a repeating timer cancelled from its own callback. */
static void test_foreign_handles_bound_is_exact(void) {
    uint32_t apart = 0;
    uint32_t bound = closest_keys(4096, &apart);
    tk_loop *a, *b;
    loops_apart(apart, &a, &b);
    /* A handle lands on the other loop at its slot and generation plus the
     * difference of the keys: take the direction in which that is +bound. */
    int a_to_b = around(a->handle_key - b->handle_key) == a->handle_key - b->handle_key;
    tk_loop *from = a_to_b ? a : b, *to = a_to_b ? b : a;
    CHECK_EQ((uint32_t)(from->handle_key - to->handle_key), bound);
    tk_timer_spec spec = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000000000};
    tk_timer_id foreign;
    CHECK_EQ(tk_loop_schedule(from, &spec, count_fn, NULL, &foreign), 0);
    uint32_t target = slot_on(to, foreign);
    CHECK_EQ(target, slot_on(from, foreign) + bound);
    /* Fill `to` up to the target slot. */
    tk_timer_id last = TK_TIMER_NONE;
    long filled = 0;
    while (last == TK_TIMER_NONE || slot_on(to, last) != target) {
        if (tk_loop_schedule(to, &spec, count_fn, NULL, &last) != 0 || ++filled > (long)target + 2) break;
    }
    CHECK_EQ(slot_on(to, last), target);
    CHECK_EQ(tk_loop_cancel(to, last), 0);
    /* Reuse it: each time a timer that cancels itself when it fires. */
    tk_timer_spec self = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1, .interval_ns = 1000000000};
    long taken_at = -1, wrong_slot = 0;
    for (long reuses = 1; reuses <= (long)bound + 1 && taken_at < 0; reuses++) {
        tk_timer_id id;
        if (tk_loop_schedule(to, &self, cancel_self_fn, NULL, &id) != 0) break;
        wrong_slot += slot_on(to, id) != target;
        tk_timer_info info;
        if (tk_loop_timer_info(to, foreign, &info) == 0) taken_at = reuses;
        if (tk_loop_advance(to, 0, 1) != 1) break;
    }
    CHECK_EQ(wrong_slot, 0);
    CHECK_EQ(taken_at, (long)bound); /* not one reuse earlier */
    CHECK_EQ(tk_loop_destroy(a), 0);
    CHECK_EQ(tk_loop_destroy(b), 0);
}

/* With a key that offsets the low half of slot 5's handles to 0, slot 5 is
 * never used, so no handle is 0 (TK_TIMER_NONE), and the other slots serve
 * as usual. White box: the key is set on a fresh loop. */
static void test_no_handle_is_zero(void) {
    tk_loop *loop = new_manual(0);
    loop->handle_key = 0u - 6u; /* slot 5: 5 + 1 + key = 0 */
    tk_timer_spec spec = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 1000};
    enum { COUNT = 200 };
    tk_timer_id ids[COUNT];
    int zero = 0, on_slot_5 = 0, scheduled = 1;
    for (int i = 0; i < COUNT; i++) {
        scheduled &= tk_loop_schedule(loop, &spec, count_fn, NULL, &ids[i]) == 0;
        zero += ids[i] == TK_TIMER_NONE;
        on_slot_5 += (uint32_t)ids[i] - 1u - loop->handle_key == 5;
    }
    CHECK(scheduled);
    CHECK_EQ(zero, 0);
    CHECK_EQ(on_slot_5, 0);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, TK_TIMER_NONE, &info), -ENOENT);
    int named = 1;
    for (int i = 0; i < COUNT; i++) named &= tk_loop_timer_info(loop, ids[i], &info) == 0;
    CHECK(named);
    for (int i = 0; i < COUNT; i++) CHECK_EQ(tk_loop_cancel(loop, ids[i]), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Memory the process holds on the heap now (ASan's count under ASan,
 * whose malloc leaves mallinfo2 at zero). Clang says it builds with ASan
 * through __has_feature, gcc through __SANITIZE_ADDRESS__. */
static size_t heap_bytes(void) {
#if defined(__SANITIZE_ADDRESS__)
#define TK_TEST_ASAN_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TK_TEST_ASAN_HEAP 1
#endif
#endif
#ifdef TK_TEST_ASAN_HEAP
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 info = mallinfo2();
    return info.uordblks;
#endif
}

/* Watching a descriptor that is not open fails before the fd-indexed watch
 * table grows for it: a huge fd number costs nothing. */
static void test_watch_bad_fd_costs_nothing(void) {
    tk_loop *loop = new_manual(0);
    int count = 0;
    size_t before = heap_bytes();
    CHECK_EQ(tk_loop_watch_fd(loop, 1 << 24, TK_IO_READABLE, io_count_fn, &count), -EBADF);
    CHECK_EQ(tk_loop_watch_fd(loop, INT32_MAX, TK_IO_READABLE, io_count_fn, &count), -EBADF);
    size_t after = heap_bytes();
    CHECK_LE(after, before + 65536); /* it was ~400 MB and 48 GB */
    CHECK_EQ(tk_loop_unwatch_fd(loop, 1 << 24), -ENOENT);
    /* A good one still works, and a refused one (a regular file) leaves it. */
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    CHECK_EQ(tk_loop_watch_fd(loop, fds[0], TK_IO_READABLE, io_count_fn, &count), 0);
    char path[] = "/tmp/tk-watch-XXXXXX";
    int file = mkstemp(path);
    CHECK(file >= 0);
    unlink(path);
    CHECK_EQ(tk_loop_watch_fd(loop, file, TK_IO_READABLE, io_count_fn, &count), -EPERM);
    CHECK_EQ(tk_loop_unwatch_fd(loop, file), -ENOENT);
    CHECK_EQ(write(fds[1], "x", 1), 1);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(count, 1);
    CHECK_EQ(tk_loop_unwatch_fd(loop, fds[0]), 0);
    close(file);
    close(fds[0]);
    close(fds[1]);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A valid fd with a large number costs what a small one does, and the
 * memory of many watches comes back when they end. Random watches and
 * unwatches of many descriptors (dups of one pipe's read end, all readable at
 * once) deliver an event to exactly the watched ones. */
static int g_io_seen[4096];

static void io_seen_fn(tk_loop *loop, int fd, uint32_t events, void *ctx) {
    (void)loop, (void)events, (void)ctx;
    if (fd >= 0 && fd < 4096) g_io_seen[fd]++;
}

static void test_watch_table(void) {
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    CHECK_EQ(write(fds[1], "x", 1), 1); /* readable from now on */
    tk_loop *loop = new_manual(0);

    /* The highest fd this process may have. */
    struct rlimit limit;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
    int high = limit.rlim_cur > 4096 ? (int)(limit.rlim_cur - 1) : -1;
    if (high > 0 && dup2(fds[0], high) == high) {
        size_t before = heap_bytes();
        CHECK_EQ(tk_loop_watch_fd(loop, high, TK_IO_READABLE, io_count_fn, NULL), 0);
        CHECK_LE(heap_bytes(), before + 4096); /* was 24 bytes per fd number below it */
        CHECK_EQ(tk_loop_unwatch_fd(loop, high), 0);
        close(high);
    } else {
        printf("watch_table: RLIMIT_NOFILE %llu: no high fd to try\n",
               (unsigned long long)limit.rlim_cur);
    }

    enum { N = 600 };
    int dups[N];
    int watched[N] = {0};
    int n = 0;
    for (; n < N; n++) {
        dups[n] = dup(fds[0]);
        if (dups[n] < 0 || dups[n] >= 4096) {
            if (dups[n] >= 0) close(dups[n]);
            break;
        }
    }
    CHECK_GE(n, 100);
    size_t base = heap_bytes();
    size_t peak = base;
    for (int round = 0; round < 40; round++) {
        for (int k = 0; k < n; k++) {
            if (rng_below(&g_rng, 3) != 0) continue;
            if (watched[k]) {
                CHECK_EQ(tk_loop_unwatch_fd(loop, dups[k]), 0);
            } else {
                CHECK_EQ(tk_loop_watch_fd(loop, dups[k], TK_IO_READABLE, io_seen_fn, NULL), 0);
            }
            watched[k] = !watched[k];
        }
        size_t now = heap_bytes();
        if (now > peak) peak = now;
        /* A pass takes a bounded number of events; level-triggered, the
         * ready fds take turns, so a few passes see them all. */
        memset(g_io_seen, 0, sizeof g_io_seen);
        int missing = 0, wrong = 0;
        for (int pass = 0; pass < n; pass++) {
            CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
            missing = 0;
            for (int k = 0; k < n; k++) missing += watched[k] && g_io_seen[dups[k]] == 0;
            if (missing == 0) break;
        }
        for (int k = 0; k < n; k++) wrong += !watched[k] && g_io_seen[dups[k]] != 0;
        CHECK_EQ(missing, 0);
        CHECK_EQ(wrong, 0);
        for (int k = 0; k < n; k++) {
            CHECK_EQ(tk_loop_unwatch_fd(loop, dups[k]), watched[k] ? 0 : -ENOENT);
            if (watched[k]) CHECK_EQ(tk_loop_watch_fd(loop, dups[k], TK_IO_READABLE, io_seen_fn, NULL), 0);
        }
    }
    for (int k = 0; k < n; k++) {
        if (watched[k]) CHECK_EQ(tk_loop_unwatch_fd(loop, dups[k]), 0);
        close(dups[k]);
    }
    /* All of it back, but for the smallest table. */
    CHECK_LE(heap_bytes(), base + 1024);
    CHECK_GE(peak, base + 4096); /* the table did grow */
    CHECK_EQ(tk_loop_destroy(loop), 0);
    close(fds[0]);
    close(fds[1]);
}

/* Names and texts of errno values, including the ones that are no errno. */
static void test_errno_names(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    CHECK(tk_errno_name(-ENOMEM) != NULL && strcmp(tk_errno_name(-ENOMEM), "ENOMEM") == 0);
    CHECK(tk_errno_name(EBUSY) != NULL && strcmp(tk_errno_name(EBUSY), "EBUSY") == 0);
#endif
    CHECK(tk_errno_name(0) == NULL);
    CHECK(tk_errno_name(4095) == NULL);
    CHECK(tk_errno_name(INT_MIN) == NULL);
    CHECK(tk_strerror(INT_MIN) != NULL && tk_strerror(4095) != NULL);
    CHECK(strcmp(tk_strerror(0), "Success") == 0);
    CHECK(strcmp(tk_strerror(-ENOMEM), tk_strerror(ENOMEM)) == 0);
}

static const test_case tests[] = {
    /* first: it forks, and is best done before any thread exists */
    {"emfile", test_emfile, 300},
    {"null_arguments", test_null_arguments, 300},
    {"unknown_clock", test_unknown_clock, 300},
    {"record_busy", test_record_busy, 60},
    {"slots_made_on_first_record", test_slots_made_on_first_record, 60},
    {"boot_id", test_boot_id, 300},
    {"timer_slack", test_timer_slack, 300},
    {"failed_calls_keep_timers_manual", test_failed_calls_keep_timers_manual, 300},
    {"failed_calls_keep_timers_real", test_failed_calls_keep_timers_real, 300},
    {"stale_handles", test_stale_handles, 300},
    {"unissued_handles", test_unissued_handles, 300},
    {"api_pairs", test_api_pairs, 60},
    {"keep_deadline", test_keep_deadline, 60},
    {"destroy_while_running", test_destroy_while_running, 300},
    {"manual_only", test_manual_only, 300},
    {"modes_out_of_range", test_modes_out_of_range, 300},
    {"destroy_full", test_destroy_full, 300},
    {"saturation_manual", test_saturation_manual, 300},
    {"longest_span_reaches_its_end", test_longest_span_reaches_its_end, 60},
    {"saturation_real", test_saturation_real, 300},
    {"watch_errors", test_watch_errors, 300},
    {"foreign_handles", test_foreign_handles, 60},
    {"foreign_handles_far_apart", test_foreign_handles_far_apart, 300},
    {"foreign_handles_bound_is_exact", test_foreign_handles_bound_is_exact, 300},
    {"no_handle_is_zero", test_no_handle_is_zero, 60},
    {"watch_bad_fd_costs_nothing", test_watch_bad_fd_costs_nothing, 60},
    {"errno_names", test_errno_names, 60},
    {"watch_table", test_watch_table, 120},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_errors", tests, sizeof tests / sizeof tests[0]);
}

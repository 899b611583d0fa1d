/*
 * Out of memory at every allocation, the way SQLite tests it: the core's
 * allocator functions are wrapped (the link flags below) so that the k-th
 * allocation fails. A scenario on a manual loop (create, reserve, schedule
 * on three clocks and in several modes, reschedule, cancel, watch and
 * unwatch descriptors, a frame ticker, advance and run with timers parked
 * outside the mode and a nested run, destroy) is run once to count its
 * allocations and record what it does, then once for every k. Each time:
 *   - every call either succeeds or returns -ENOMEM, and a call that failed
 *     succeeds when made again (an advance is made again up to the same
 *     time): nothing already scheduled was lost;
 *   - the callbacks run, their clocks and missed counts, and the pending
 *     counts at each step are those of the run without a failure: nothing
 *     fired twice or went missing;
 *   - the release handler sees every context exactly once;
 *   - nothing leaks (LeakSanitizer, at exit).
 */
/* test link flags: -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc -Wl,--wrap=posix_memalign */
#include "CTimerCore.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_harness.h"

/* The failing allocator the Swift tests use too: this thread's k-th
 * allocation fails while armed. */
#include "../CAllocationFaults/allocation_faults.c"

/* ------------------------------------------------------------------------
 * What a scenario does, recorded without allocating
 * ------------------------------------------------------------------------ */

enum { MAX_EVENTS = 8192, TIMERS = 300, MAX_PENDING_STEPS = 64 };

typedef struct event {
    int kind;      /* 1 timer, 2 frame, 3 descriptor, 4 release */
    int tag;
    uint64_t missed;
    int64_t now;
} event;

typedef struct record {
    event events[MAX_EVENTS];
    int count;
    uint64_t pending[MAX_PENDING_STEPS];
    int steps;
    int enomem;    /* calls that returned -ENOMEM */
    int bad;       /* calls that returned anything else unexpected */
} record;

static record *g_record;
static tk_loop *g_loop;
static int g_tags[TIMERS + 8];
static int g_released[TIMERS + 8];
static int g_nested_done;

static void note(int kind, int tag, uint64_t missed) {
    record *r = g_record;
    int64_t now = 0;
    tk_loop_now(g_loop, TK_CLOCK_MONOTONIC, &now);
    if (r->count < MAX_EVENTS) r->events[r->count++] = (event){kind, tag, missed, now};
}

/* The loop's hold (tk_loop_set_hold), held while any timer with a record
 * of the caller's is live: begun and ended as often under every fault. */
static char g_hold;
static int g_hold_begins, g_hold_ends;

static void on_hold(tk_loop *loop, void *context) {
    (void)loop;
    (void)context;
    g_hold_begins++;
}

static void on_release(tk_loop *loop, void *context) {
    (void)loop;
    if (context == &g_hold) {
        g_hold_ends++;
        return;
    }
    int tag = *(int *)context;
    g_released[tag]++;
}

/* A call that may fail only for want of memory; made again once if so.
 * Anything else is counted as bad (and printed). */
#define MAY_FAIL(call)                                                         \
    do {                                                                       \
        int64_t rc_ = (call);                                                  \
        if (rc_ == -ENOMEM) {                                                  \
            g_record->enomem++;                                                \
            rc_ = (call);                                                      \
        }                                                                      \
        if (rc_ < 0) {                                                         \
            g_record->bad++;                                                   \
            fprintf(stderr, "  %s:%d: %s = %lld\n", __FILE__, __LINE__, #call, \
                    (long long)rc_);                                           \
        }                                                                      \
    } while (0)

static int64_t monotonic_now(void) {
    int64_t now = 0;
    tk_loop_now(g_loop, TK_CLOCK_MONOTONIC, &now);
    return now;
}

/* Moves time to `target` in `mode`, again from where it got if a pass ran
 * out of memory. */
static void advance_to(tk_mode_set mode, int64_t target) {
    int64_t rc = tk_loop_advance(g_loop, mode, target - monotonic_now());
    if (rc == -ENOMEM) {
        g_record->enomem++;
        rc = tk_loop_advance(g_loop, mode, target - monotonic_now());
    }
    if (rc < 0) {
        g_record->bad++;
        fprintf(stderr, "  advance to %lld: %lld\n", (long long)target, (long long)rc);
    }
}

static void step(void) {
    tk_loop_stats stats;
    tk_loop_get_stats(g_loop, &stats);
    if (g_record->steps < MAX_PENDING_STEPS) g_record->pending[g_record->steps++] = stats.pending;
}

static void timer_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id;
    note(1, *(int *)context, missed);
}

static void frame_fn(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame, void *context) {
    (void)loop, (void)ticker;
    note(2, *(int *)context, frame->dropped_frames);
}

static void fd_fn(tk_loop *loop, int fd, uint32_t events, void *context) {
    (void)loop, (void)events, (void)context;
    char byte;
    if (read(fd, &byte, 1) == 1) note(3, byte, 0);
}

/* A callback that runs the loop nested in mode 2, with a deadline, after
 * scheduling timers outside that mode (their parking allocates). */
static void nested_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id;
    note(1, *(int *)context, missed);
    if (g_nested_done++) return;
    for (int i = 0; i < 8; i++) {
        tk_timer_spec spec = {.delay_ns = 1000 + i, .modes = TK_MODES(0) | TK_MODES(3)};
        tk_timer_id ignored;
        g_tags[TIMERS + 1] = TIMERS + 1;
        MAY_FAIL(tk_loop_schedule(loop, &spec, timer_fn, &g_tags[TIMERS + 1], &ignored));
    }
    int64_t now = 0;
    tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now);
    MAY_FAIL(tk_loop_run(loop, TK_MODES(2), now + 5000, 0));
}

/* The records of the scenario's timers that keep theirs in memory of the
 * caller's (every other one): a failed schedule leaves its record zero. */
static tk_timer_record g_records[TIMERS];

/* Schedules timer `i` with its record in g_records; a failed call must
 * leave the record zero, as it found it. */
static int schedule_record(const tk_timer_spec *spec, int i, tk_timer_id *id) {
    static const tk_timer_record zero;
    int result = tk_loop_schedule_record(g_loop, &g_records[i], spec, timer_fn, &g_tags[i], id);
    if (result != 0 && memcmp(&g_records[i], &zero, sizeof zero) != 0) {
        g_record->bad++;
        fprintf(stderr, "  timer %d: tk_loop_schedule_record failed (%d) and wrote its record\n",
                i, result);
    }
    return result;
}

/* The scenario. Times are manual nanoseconds. */
static void scenario(void) {
    g_loop = NULL;
    g_nested_done = 0;
    memset(g_records, 0, sizeof g_records);
    MAY_FAIL(tk_loop_create_manual(&g_loop, 1000));
    if (g_loop == NULL) return;
    MAY_FAIL(tk_loop_set_release_handler(g_loop, on_release));
    MAY_FAIL(tk_loop_set_hold(g_loop, on_hold, &g_hold));
    MAY_FAIL(tk_loop_reserve(g_loop, TK_CLOCK_MONOTONIC, 16));

    tk_timer_id ids[TIMERS];
    for (int i = 0; i < TIMERS; i++) {
        g_tags[i] = i;
        tk_timer_spec spec = {
            .clock = (tk_clock)(i % 3),
            .delay_ns = 100 + (int64_t)(i * 37 % 1000) * 10,
            .interval_ns = i % 5 == 0 ? 200000 + i : 0,
            .leeway_ns = i % 4 == 0 ? 50 : 0,
            .modes = i % 7 == 0 ? TK_MODES(1) : i % 7 == 1 ? TK_MODES(0) | TK_MODES(1) : 0,
        };
        ids[i] = TK_TIMER_NONE;
        if (i % 2) {
            MAY_FAIL(schedule_record(&spec, i, &ids[i]));
        } else {
            MAY_FAIL(tk_loop_schedule(g_loop, &spec, timer_fn, &g_tags[i], &ids[i]));
        }
    }
    step();
    /* Reschedule and cancel some. */
    for (int i = 0; i < TIMERS; i += 9) {
        tk_timer_spec spec = {.clock = TK_CLOCK_BOOTTIME, .delay_ns = 3000 + i, .modes = TK_MODES(2)};
        MAY_FAIL(tk_loop_reschedule(g_loop, ids[i], &spec));
    }
    for (int i = 4; i < TIMERS; i += 11) MAY_FAIL(tk_loop_cancel(g_loop, ids[i]));
    step();

    /* A nested run from a callback, in the last run (mode 1). */
    g_tags[TIMERS] = TIMERS;
    tk_timer_spec nested = {.delay_ns = 2500, .modes = TK_MODES(1) | TK_MODES(4)};
    tk_timer_id nested_id;
    MAY_FAIL(tk_loop_schedule(g_loop, &nested, nested_fn, &g_tags[TIMERS], &nested_id));

    /* Descriptors. */
    int fds[2];
    if (pipe(fds) != 0) abort();
    MAY_FAIL(tk_loop_watch_fd(g_loop, fds[0], TK_IO_READABLE, fd_fn, NULL));
    if (write(fds[1], "a", 1) != 1) abort();

    /* A frame ticker at 1 kHz (manual time: 1,000,000 ns a frame). */
    g_tags[TIMERS + 2] = TIMERS + 2;
    tk_frame_ticker_spec frames = {.rate = {.minimum = 1000, .maximum = 1000, .preferred = 1000}};
    tk_frame_ticker *ticker = NULL;
    MAY_FAIL(tk_frame_ticker_create(g_loop, &frames, frame_fn, &g_tags[TIMERS + 2], &ticker));
    step();

    /* Time moves: in mode 1 (mode 0's timers park), then in mode 0, then a
     * run with a deadline, which also reads the pipe. */
    advance_to(TK_MODES(1), 2000);
    step();
    advance_to(0, 6000);
    step();
    MAY_FAIL(tk_loop_run(g_loop, 0, monotonic_now() + 3000000, 0));
    step();
    MAY_FAIL(tk_loop_unwatch_fd(g_loop, fds[0]));
    if (write(fds[1], "b", 1) != 1) abort();
    MAY_FAIL(tk_loop_watch_fd(g_loop, fds[0], TK_IO_READABLE, fd_fn, NULL));
    MAY_FAIL(tk_loop_run(g_loop, TK_MODES(1), monotonic_now() + 2000000, 0));
    step();
    advance_to(0, monotonic_now() + 100000); /* what the nested callback parked */
    step();
    if (ticker) MAY_FAIL(tk_frame_ticker_destroy(ticker));
    MAY_FAIL(tk_loop_unwatch_fd(g_loop, fds[0]));
    close(fds[0]);
    close(fds[1]);
    /* Held while a timer with a record is live; ended by the destroy. */
    int live_records = 0;
    for (int i = 1; i < TIMERS; i += 2) {
        tk_timer_info info;
        live_records += ids[i] != TK_TIMER_NONE && tk_loop_timer_info(g_loop, ids[i], &info) == 0;
    }
    if (g_hold_begins - g_hold_ends != (live_records > 0)) {
        g_record->bad++;
        fprintf(stderr, "  the hold began %d times and ended %d, with %d live timers with records\n",
                g_hold_begins, g_hold_ends, live_records);
    }
    MAY_FAIL(tk_loop_destroy(g_loop));
    if (g_hold_begins != g_hold_ends) {
        g_record->bad++;
        fprintf(stderr, "  destroyed, the hold began %d times and ended %d\n", g_hold_begins,
                g_hold_ends);
    }
    g_loop = NULL;
}

/* Runs the scenario with the k-th allocation failing (0: none). */
static void run_once(long fail_at, record *out) {
    memset(out, 0, sizeof *out);
    memset(g_released, 0, sizeof g_released);
    g_hold_begins = g_hold_ends = 0;
    g_record = out;
    allocation_faults_arm(fail_at);
    scenario();
    allocation_faults_disarm();
}

static int same_events(const record *a, const record *b) {
    if (a->count != b->count || a->steps != b->steps) return 0;
    for (int i = 0; i < a->count; i++) {
        const event *x = &a->events[i], *y = &b->events[i];
        if (x->kind != y->kind || x->tag != y->tag || x->missed != y->missed || x->now != y->now) {
            return 0;
        }
    }
    return memcmp(a->pending, b->pending, sizeof a->pending) == 0;
}

static void test_every_allocation_fails_once(void) {
    static record golden, faulty;
    run_once(0, &golden);
    long allocations = allocation_faults_count();
    int golden_released[TIMERS + 8];
    memcpy(golden_released, g_released, sizeof golden_released);
    printf("scenario: %ld allocations, %d callbacks, %d steps\n", allocations, golden.count,
           golden.steps);
    CHECK_EQ(golden.bad, 0);
    CHECK_EQ(golden.enomem, 0);
    CHECK_GE(allocations, 15);   /* the wrapper sees the core's allocations */
    CHECK_GE(golden.count, 100); /* and the scenario does something: */
    int kinds[5] = {0}, nested = 0, inside = 0;
    for (int i = 0; i < golden.count; i++) {
        kinds[golden.events[i].kind]++;
        nested += golden.events[i].tag == TIMERS && golden.events[i].kind == 1;
        inside += golden.events[i].tag == TIMERS + 1 && golden.events[i].kind == 1;
    }
    CHECK_GE(kinds[2], 3);  /* frames */
    CHECK_EQ(kinds[3], 2);  /* the pipe's two bytes */
    CHECK_EQ(nested, 1);    /* the callback that ran the loop nested */
    CHECK_EQ(inside, 8);    /* the timers it scheduled, parked in the nested run, fired later */
    int released_all = 1;
    for (int i = 0; i < TIMERS; i++) released_all &= golden_released[i] == 1;
    CHECK(released_all);
    CHECK_GE(g_hold_begins, 1); /* the scenario's records held the loop */

    int failures_seen = 0, mismatches = 0, bad = 0, release_errors = 0;
    for (long k = 1; k <= allocations + 1; k++) {
        run_once(k, &faulty);
        if (k <= allocations) failures_seen += allocation_faults_refused() == 1 && faulty.enomem >= 1;
        bad += faulty.bad;
        if (!same_events(&golden, &faulty)) {
            mismatches++;
            if (mismatches <= 3) {
                fprintf(stderr, "  k=%ld: %d callbacks (want %d), %d steps\n", k, faulty.count,
                        golden.count, faulty.steps);
            }
        }
        for (int i = 0; i < TIMERS + 8; i++) release_errors += g_released[i] != golden_released[i];
    }
    printf("every k in 1...%ld: %d failed calls seen and made again\n", allocations,
           failures_seen);
    CHECK_EQ(bad, 0);
    CHECK_EQ(mismatches, 0);
    CHECK_EQ(release_errors, 0);
    /* Each refused allocation was reported to the caller as -ENOMEM. */
    CHECK_EQ(failures_seen, allocations);
}

static void count_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop, (void)id, (void)missed, (void)context;
}

/* Schedules `count` timers on `clock`, far away; the number that failed. */
static int schedule_many(tk_loop *loop, tk_clock clock, int count) {
    tk_timer_spec spec = {.clock = clock, .delay_ns = INT64_C(3600000000000)};
    int failed = 0;
    for (int i = 0; i < count; i++) {
        tk_timer_id id;
        failed += tk_loop_schedule(loop, &spec, count_fire, NULL, &id) != 0;
    }
    return failed;
}

static int g_reserve_result;
static long g_reserve_failed, g_reserve_allocations;

/* Reserves room for 64 monotonic timers (the table's first size, which the
 * callback's own slot takes part of) and schedules them, counting
 * allocations. */
static void reserve_in_callback(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id, (void)missed, (void)context;
    g_reserve_result = tk_loop_reserve(loop, TK_CLOCK_MONOTONIC, 64);
    allocation_faults_arm(LONG_MAX);
    g_reserve_failed = schedule_many(loop, TK_CLOCK_MONOTONIC, 64);
    g_reserve_allocations = allocation_faults_count();
    allocation_faults_disarm();
}

/* tk_loop_reserve makes room on its clock beside the timers pending on the
 * other clocks (which share the timer table): scheduling up to the number
 * reserved then never allocates. */
static void test_reserve_is_per_clock(void) {
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        tk_loop *loop = NULL;
        CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
        /* 60 pending on each other clock, 30 on this one. */
        for (int other = 0; other < TK_CLOCK_COUNT; other++) {
            if (other != clock) CHECK_EQ(schedule_many(loop, (tk_clock)other, 60), 0);
        }
        CHECK_EQ(schedule_many(loop, (tk_clock)clock, 30), 0);
        CHECK_EQ(tk_loop_reserve(loop, (tk_clock)clock, 200), 0);
        allocation_faults_arm(LONG_MAX); /* counts, never fails */
        int failed = schedule_many(loop, (tk_clock)clock, 170);
        long allocations = allocation_faults_count();
        allocation_faults_disarm();
        CHECK_EQ(failed, 0);
        CHECK_EQ(allocations, 0);
        tk_loop_stats stats;
        CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
        CHECK_EQ(stats.pending, 320);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
    /* From a one-shot's callback, whose slot stays taken until it returns. */
    {
        tk_loop *loop = NULL;
        CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
        tk_timer_spec now = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 0};
        tk_timer_id id;
        CHECK_EQ(tk_loop_schedule(loop, &now, reserve_in_callback, NULL, &id), 0);
        g_reserve_result = -1;
        g_reserve_failed = g_reserve_allocations = -1;
        CHECK_EQ(tk_loop_advance(loop, 0, 0), 1);
        CHECK_EQ(g_reserve_result, 0);
        CHECK_EQ(g_reserve_failed, 0);
        CHECK_EQ(g_reserve_allocations, 0);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
    /* A reservation beyond what the table can index is refused. */
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    CHECK_EQ(schedule_many(loop, TK_CLOCK_BOOTTIME, 1), 0);
    CHECK_EQ(tk_loop_reserve(loop, TK_CLOCK_MONOTONIC, UINT32_MAX - 1), -ENOMEM);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static const test_case tests[] = {
    {"every_allocation_fails_once", test_every_allocation_fails_once, 600},
    {"reserve_is_per_clock", test_reserve_is_per_clock, 60},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_faults_alloc", tests, sizeof tests / sizeof tests[0]);
}

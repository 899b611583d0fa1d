/*
 * Frame tickers: exact frame sequences on a manual clock (grid, dropped
 * frames, pause, rate changes, adaptation, modes, release), "never early"
 * and "fired" on the real clock, and bad input.
 *
 * Usage: test_frame_ticker [seed] [--only=NAME]     (or env TK_SEED)
 *
 * Linked with posix_memalign wrapped (the flags below, which scripts/test.sh
 * reads), so that a test can make the deadline heap's growth fail.
 */
/* test link flags: -Wl,--wrap=posix_memalign */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_harness.h"

/* While set, the core's aligned allocations (the deadline heap's growth) fail. */
static atomic_int g_fail_aligned_allocations;

int __real_posix_memalign(void **memory, size_t alignment, size_t size);
int __wrap_posix_memalign(void **memory, size_t alignment, size_t size);
int __wrap_posix_memalign(void **memory, size_t alignment, size_t size) {
    if (atomic_load(&g_fail_aligned_allocations)) return ENOMEM;
    return __real_posix_memalign(memory, alignment, size);
}

#define MS INT64_C(1000000)
#define START (INT64_C(1000) * MS)
#define MAX_FRAMES 4096

/* What a ticker's callback saw, and what it should do at given frames. */
typedef struct recorder {
    tk_frame frames[MAX_FRAMES];
    atomic_int count; /* frames[0..count) are written by the loop's thread */
    int early;         /* frames called early (see on_frame) */
    int seen;          /* frames called, also past MAX_FRAMES */
    int64_t last_target;
    int rate_changes;  /* set by tests that change the rate: targets move */
    int64_t work;      /* manual loops: time each callback takes */
    int work_at;       /* ... only at this frame index (-1: every frame) */
    int pause_at;      /* pause the ticker from its callback at this index */
    int destroy_at;    /* destroy it from its callback at this index */
    double rate_at_hz; /* with rate_at: a new fixed rate set from the callback */
    int rate_at;
    int bad_modes_at;  /* ask for an invalid mode set from the callback at this index */
    int bad_modes_result;
    int fillers;       /* timers scheduled by fill_heap */
    atomic_int releases;
    int destroy_loop_in_release; /* on_release calls tk_loop_destroy ... */
    int destroy_loop_result;     /* ... and keeps what it returned */
    atomic_int after_release; /* callbacks after the release: must stay 0 */
} recorder;

static void recorder_init(recorder *r) {
    memset(r, 0, sizeof *r);
    r->work_at = -1;
    r->pause_at = -1;
    r->destroy_at = -1;
    r->rate_at = -1;
    r->bad_modes_at = -1;
}

static tk_frame_rate_range fixed(double hz) {
    tk_frame_rate_range range = {hz, hz, hz};
    return range;
}

static void on_frame(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame, void *context) {
    recorder *r = context;
    if (atomic_load(&r->releases) > 0) atomic_fetch_add(&r->after_release, 1);
    if (frame->now_ns < frame->timestamp_ns) r->early++;
    int index = atomic_load(&r->count);
    /* Early: called before this frame's grid time, or (unless the rate
     * changed meanwhile) before the target the previous frame announced. */
    if (frame->now_ns < frame->timestamp_ns) r->early++;
    if (r->seen > 0 && !r->rate_changes && frame->now_ns < r->last_target) r->early++;
    r->last_target = frame->target_timestamp_ns;
    r->seen++;
    if (index < MAX_FRAMES) {
        r->frames[index] = *frame;
        atomic_store(&r->count, index + 1);
    }
    /* A new rate first, so that work after it runs past the new grid. */
    if (index == r->rate_at) CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(r->rate_at_hz)), 0);
    if (r->work > 0 && (r->work_at < 0 || r->work_at == index)) {
        int64_t now;
        tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now);
        tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, now + r->work);
    }
    if (index == r->pause_at) CHECK_EQ(tk_frame_ticker_set_paused(ticker, 1), 0);
    if (index == r->destroy_at) CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    if (index == r->bad_modes_at) r->bad_modes_result = tk_frame_ticker_set_modes(ticker, TK_MODES(40));
}

static void noop_timer(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)loop;
    (void)timer;
    (void)missed;
    (void)context;
}

static void on_release(tk_loop *loop, void *context) {
    recorder *r = context;
    atomic_fetch_add(&r->releases, 1);
    if (r->destroy_loop_in_release) r->destroy_loop_result = tk_loop_destroy(loop);
}

static tk_loop *manual_loop(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, START), 0);
    CHECK_EQ(tk_loop_set_release_handler(loop, on_release), 0);
    return loop;
}

static tk_frame_ticker *start(tk_loop *loop, tk_frame_rate_range rate, recorder *r) {
    tk_frame_ticker_spec spec = {.rate = rate};
    tk_frame_ticker *ticker = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, r, &ticker), 0);
    return ticker;
}

static tk_frame_ticker_info info_of(tk_frame_ticker *ticker) {
    tk_frame_ticker_info info;
    memset(&info, 0, sizeof info);
    CHECK_EQ(tk_frame_ticker_get_info(ticker, &info), 0);
    return info;
}

/* Checks frame `i` against its expected grid time and dropped count. */
#define CHECK_FRAME(r, i, at_ms, dropped_count)                                  \
    do {                                                                         \
        CHECK_EQ((r)->frames[i].index, (i));                                     \
        CHECK_EQ((r)->frames[i].timestamp_ns, START + (int64_t)(at_ms) * MS);    \
        CHECK_EQ((r)->frames[i].dropped_frames, (dropped_count));                \
    } while (0)

/* ---- Manual clock: exact sequences ---------------------------------------- */

static void test_fixed_rate_grid(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 35 * MS), 3);
    CHECK_EQ(r.count, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_FRAME(&r, i, 10 * (i + 1), 0);
        CHECK_EQ(r.frames[i].duration_ns, 10 * MS);
        CHECK_EQ(r.frames[i].target_timestamp_ns, r.frames[i].timestamp_ns + 10 * MS);
        CHECK_EQ(r.frames[i].now_ns, r.frames[i].timestamp_ns);
    }
    tk_frame_ticker_info info = info_of(ticker);
    CHECK_EQ(info.frames, 3);
    CHECK_EQ(info.dropped_frames, 0);
    CHECK_EQ(info.period_ns, 10 * MS);
    CHECK_EQ(info.next_timestamp_ns, START + 40 * MS);
    CHECK(info.rate == 100);
    CHECK_EQ(info.modes, TK_MODES(TK_MODE_DEFAULT));
    CHECK_EQ(info.paused, 0);
    /* One pending timer drives it; a million frames later it is still on the grid. */
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, 1);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(atomic_load(&r.releases), 1);
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 100 * MS), 0);
    CHECK_EQ(r.count, 3);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    CHECK_EQ(atomic_load(&r.releases), 1);
}

static void test_no_drift_over_many_frames(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    /* 60 Hz: a period of 16,666,667 ns, so the grid is exact in whole ns. */
    tk_frame_ticker *ticker = start(loop, fixed(60), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 60 * 1000 * MS), 3599); /* frame 3600 is 1.2 us past 60 s */
    CHECK_EQ(r.count, 3599);
    CHECK_EQ(r.frames[r.count - 1].timestamp_ns, START + (int64_t)r.count * 16666667);
    CHECK_EQ(info_of(ticker).dropped_frames, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_long_callback_drops_frames(void) {
    static recorder r;
    recorder_init(&r);
    r.work = 25 * MS; /* frame 1 (at 20 ms) runs until 45 ms */
    r.work_at = 1;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 65 * MS), 4);
    CHECK_FRAME(&r, 0, 10, 0);
    CHECK_FRAME(&r, 1, 20, 0);
    CHECK_FRAME(&r, 2, 50, 2); /* 30 and 40 were covered by the callback */
    CHECK_FRAME(&r, 3, 60, 0);
    CHECK_EQ(r.frames[2].now_ns, START + 50 * MS); /* waited for the grid, not late */
    CHECK_EQ(info_of(ticker).dropped_frames, 2);
    CHECK_EQ(r.early, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_callback_ending_on_the_grid(void) {
    static recorder r;
    recorder_init(&r);
    r.work = 20 * MS; /* frame 0 (at 10 ms) ends exactly at 30 ms, a grid point */
    r.work_at = 0;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 35 * MS), 2);
    CHECK_FRAME(&r, 0, 10, 0);
    CHECK_FRAME(&r, 1, 30, 1); /* 20 dropped; 30 is served at once */
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_late_loop_gets_latest_grid_point(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    /* The loop's thread wakes 37 ms late (time moves without a pass). */
    CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, START + 37 * MS), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 0), 1);
    CHECK_FRAME(&r, 0, 30, 2); /* 10 and 20 dropped */
    CHECK_EQ(r.frames[0].now_ns, START + 37 * MS);
    CHECK_EQ(tk_loop_advance(loop, 0, 5 * MS), 1);
    CHECK_FRAME(&r, 1, 40, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_pause_and_resume_keep_the_grid(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 25 * MS), 2);
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 1), 0);
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 1), 0); /* no-op */
    tk_frame_ticker_info info = info_of(ticker);
    CHECK_EQ(info.paused, 1);
    CHECK_EQ(info.next_timestamp_ns, INT64_MAX);
    CHECK_EQ(tk_loop_advance(loop, 0, 78 * MS), 0); /* to 103 ms: nothing */
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 0), 0);
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 0), 0); /* no-op */
    CHECK_EQ(info_of(ticker).next_timestamp_ns, START + 110 * MS); /* same phase */
    CHECK_EQ(tk_loop_advance(loop, 0, 17 * MS), 2);
    CHECK_FRAME(&r, 2, 110, 0); /* the pause is not counted as dropped frames */
    CHECK_FRAME(&r, 3, 120, 0);
    CHECK_EQ(info_of(ticker).dropped_frames, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_pause_from_callback(void) {
    static recorder r;
    recorder_init(&r);
    r.pause_at = 1;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 100 * MS), 2);
    CHECK_EQ(info_of(ticker).paused, 1);
    CHECK_EQ(atomic_load(&r.releases), 0); /* paused, not gone */
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 0), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 1);
    CHECK_FRAME(&r, 2, 110, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_destroy_from_callback(void) {
    static recorder r;
    recorder_init(&r);
    r.destroy_at = 2;
    tk_loop *loop = manual_loop();
    start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 100 * MS), 3);
    CHECK_EQ(atomic_load(&r.releases), 1);
    CHECK_EQ(atomic_load(&r.after_release), 0);
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    CHECK_EQ(atomic_load(&r.releases), 1);
}

static void test_rate_change_realigns(void) {
    static recorder r;
    recorder_init(&r);
    r.rate_changes = 1;
    r.rate_at = 3; /* at the frame at 60 ms: back to 100 Hz, from there */
    r.rate_at_hz = 100;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 23 * MS), 2);
    /* 50 Hz from the latest frame (20 ms): 40, 60, ... */
    CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(50)), 0);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, START + 40 * MS);
    CHECK_EQ(info_of(ticker).period_ns, 20 * MS);
    CHECK_EQ(tk_loop_advance(loop, 0, 52 * MS), 3); /* to 75 ms */
    CHECK_FRAME(&r, 2, 40, 0);
    CHECK_EQ(r.frames[2].duration_ns, 20 * MS);
    CHECK_FRAME(&r, 3, 60, 0);
    CHECK_FRAME(&r, 4, 70, 0); /* 100 Hz again, anchored at 60 */
    CHECK_EQ(r.frames[4].duration_ns, 10 * MS);
    CHECK_EQ(info_of(ticker).dropped_frames, 0);
    /* A bad range changes nothing. */
    tk_frame_ticker_info before = info_of(ticker);
    tk_frame_rate_range bad = {60, 30, 0};
    CHECK_EQ(tk_frame_ticker_set_rate(ticker, bad), -EINVAL);
    tk_frame_ticker_info after = info_of(ticker);
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A new rate is anchored at the latest frame's timestamp, whatever restarted
 * the grid since that frame: a resume, or an earlier change of rate. */
static void test_rate_change_anchors_at_the_latest_frame(void) {
    static recorder r;
    recorder_init(&r);
    r.rate_changes = 1;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 105 * MS), 10); /* the latest frame at 100 ms */
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 1), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 30 * MS), 0); /* to 135 ms */
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 0), 0);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, START + 140 * MS);
    /* 50 Hz from 100 ms: 120, 140 (not from 130, the resumed grid's point
     * before its next: 150). */
    CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(50)), 0);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, START + 140 * MS);
    /* Time moves with no pass (to 185 ms): 50 Hz from 100 ms has its next
     * frame at 200 ms. Then 40 Hz, still from 100 ms: 125, ..., 200, 225
     * (not from 180, the 50 Hz grid's point before its next: 205). */
    CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, START + 185 * MS), 0);
    CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(50)), 0);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, START + 200 * MS);
    CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(40)), 0);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, START + 200 * MS);
    CHECK_EQ(info_of(ticker).period_ns, 25 * MS);
    CHECK_EQ(tk_loop_advance(loop, 0, 40 * MS), 2); /* to 225 ms */
    CHECK_FRAME(&r, 10, 200, 0);
    CHECK_FRAME(&r, 11, 225, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Before the first frame, a change of rate keeps the grid's anchor (the
 * ticker's start), as a resume does: changes made more often than once a
 * period, the same rate again or another, do not put the first frame off. */
static void test_rate_changes_before_the_first_frame(void) {
    static recorder r;
    recorder_init(&r);
    r.rate_changes = 1;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r); /* 10, 20, ... ms */
    /* The same rate again every 4 ms: the grid stays the start's. */
    for (int i = 0; i < 10; i++) {
        CHECK(tk_loop_advance(loop, 0, 4 * MS) >= 0);
        CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(100)), 0);
    }
    CHECK_EQ(atomic_load(&r.count), 4); /* at 40 ms */
    CHECK_FRAME(&r, 0, 10, 0);
    CHECK_FRAME(&r, 3, 40, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    /* Another rate before the first frame: its grid from the start too. */
    recorder_init(&r);
    r.rate_changes = 1;
    ticker = start(loop, fixed(100), &r); /* from 40 ms: 50, 60, ... */
    CHECK_EQ(tk_loop_advance(loop, 0, 4 * MS), 0);
    CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(50)), 0);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, START + 60 * MS);
    CHECK_EQ(tk_loop_advance(loop, 0, 16 * MS), 1); /* to 60 ms */
    CHECK_FRAME(&r, 0, 60, 0);
    CHECK_EQ(info_of(ticker).dropped_frames, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A new rate set from the callback starts at that frame; the new grid's
 * points the callback then runs past are not counted as dropped. */
static void test_rate_change_from_a_long_callback(void) {
    static recorder r;
    recorder_init(&r);
    r.rate_changes = 1;
    r.rate_at = 2; /* the frame at 30 ms: 50 Hz from there (50, 70, 90, ...) */
    r.rate_at_hz = 50;
    r.work = 45 * MS; /* ... and the callback runs to 75 ms */
    r.work_at = 2;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 100 * MS), 4);
    CHECK_FRAME(&r, 2, 30, 0);
    CHECK_FRAME(&r, 3, 90, 0); /* 50 and 70 were run past */
    CHECK_EQ(r.frames[3].duration_ns, 20 * MS);
    CHECK_EQ(info_of(ticker).dropped_frames, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_range_adapts(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    tk_frame_rate_range range = {30, 120, 120};
    tk_frame_ticker *ticker = start(loop, range, &r);
    int64_t base = 8333333; /* 1 s / 120 */
    CHECK(info_of(ticker).rate == 120);
    /* 12 ms of work a frame: every other point of the 120 Hz grid is
     * dropped, so after one second the ticker steps down to 60 Hz. */
    r.work = 12 * MS;
    CHECK(tk_loop_advance(loop, 0, 1100 * MS) > 0);
    tk_frame_ticker_info info = info_of(ticker);
    CHECK(info.rate == 60);
    CHECK_EQ(info.period_ns, 2 * base);
    int at_60 = r.count;
    CHECK(tk_loop_advance(loop, 0, 1000 * MS) > 0);
    for (int i = at_60; i < r.count; i++) {
        CHECK_EQ(r.frames[i].dropped_frames, 0);
        CHECK_EQ(r.frames[i].duration_ns, 2 * base);
        CHECK_EQ(r.frames[i].timestamp_ns - r.frames[i - 1].timestamp_ns, 2 * base);
    }
    /* 12 ms is more than half of 120 Hz's period: it stays at 60 Hz. */
    CHECK(tk_loop_advance(loop, 0, 2000 * MS) > 0);
    CHECK(info_of(ticker).rate == 60);
    /* Light work: after the window in progress (which still saw 12 ms) and
     * one clean window, it is back at the preferred rate. */
    r.work = 3 * MS;
    CHECK(tk_loop_advance(loop, 0, 900 * MS) > 0);
    CHECK(info_of(ticker).rate == 60);
    CHECK(tk_loop_advance(loop, 0, 1200 * MS) > 0);
    CHECK(info_of(ticker).rate == 120);
    /* Heavy work: it steps down one rate a window, not below the minimum. */
    r.work = 100 * MS;
    CHECK(tk_loop_advance(loop, 0, 10000 * MS) > 0);
    info = info_of(ticker);
    CHECK(info.rate == 30);
    CHECK_EQ(info.period_ns, 4 * base);
    CHECK_EQ(r.early, 0);
    for (int i = 1; i < r.count; i++) {
        CHECK(r.frames[i].timestamp_ns > r.frames[i - 1].timestamp_ns);
    }
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_preferred_rate_within_range(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    r.rate_changes = 1;
    tk_frame_rate_range range = {20, 120, 45}; /* 120 / 3 = 40 is the nearest rung */
    tk_frame_ticker *ticker = start(loop, range, &r);
    tk_frame_ticker_info info = info_of(ticker);
    CHECK(info.rate == 40);
    CHECK_EQ(info.period_ns, 3 * 8333333);
    /* Idle work never raises it above the preferred rate. */
    CHECK(tk_loop_advance(loop, 0, 3000 * MS) > 0);
    CHECK(info_of(ticker).rate == 40);
    tk_frame_rate_range zero = {20, 120, 0}; /* 0: the maximum */
    CHECK_EQ(tk_frame_ticker_set_rate(ticker, zero), 0);
    CHECK(info_of(ticker).rate == 120);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_modes(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    tk_frame_ticker_spec spec = {.rate = fixed(100), .modes = TK_MODES(1)};
    tk_frame_ticker *ticker = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &r, &ticker), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 35 * MS), 0); /* mode 0: waits */
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(1), 0), 1); /* mode 1: the latest grid point */
    CHECK_FRAME(&r, 0, 30, 2);
    CHECK_EQ(tk_frame_ticker_set_modes(ticker, 0), 0); /* 0: the default mode */
    CHECK_EQ(info_of(ticker).modes, TK_MODES(TK_MODE_DEFAULT));
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 1);
    CHECK_FRAME(&r, 1, 40, 0);
    CHECK_EQ(tk_frame_ticker_set_modes(ticker, TK_MODES(0) | TK_MODES(1)), 0);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(1), 10 * MS), 1);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* An invalid mode set asked for from the ticker's own callback is refused
 * there, as anywhere: it used to be taken, and the re-arm after the callback
 * then failed and stopped the ticker. */
static void test_bad_modes_from_callback(void) {
    static recorder r;
    recorder_init(&r);
    r.bad_modes_at = 1;
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 50 * MS), 5);
    CHECK_EQ(r.bad_modes_result, -EINVAL);
    tk_frame_ticker_info info = info_of(ticker);
    CHECK_EQ(info.error, 0);
    CHECK_EQ(info.modes, TK_MODES(TK_MODE_DEFAULT));
    CHECK_FRAME(&r, 4, 50, 0);
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 1), 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_created_paused(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    tk_frame_ticker_spec spec = {.rate = fixed(100), .flags = TK_FRAME_PAUSED};
    tk_frame_ticker *ticker = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &r, &ticker), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 55 * MS), 0);
    CHECK_EQ(tk_frame_ticker_set_paused(ticker, 0), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 1);
    CHECK_FRAME(&r, 0, 60, 0); /* the grid of the creation time */
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_loop_destroy_releases(void) {
    static recorder r1, r2;
    recorder_init(&r1);
    recorder_init(&r2);
    tk_loop *loop = manual_loop();
    start(loop, fixed(100), &r1);
    tk_frame_ticker_spec paused = {.rate = fixed(30), .flags = TK_FRAME_PAUSED};
    tk_frame_ticker *ticker = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &paused, on_frame, &r2, &ticker), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 15 * MS), 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
    CHECK_EQ(atomic_load(&r1.releases), 1);
    CHECK_EQ(atomic_load(&r2.releases), 1);
}

static void test_bad_input(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    tk_frame_ticker *ticker = NULL;
    tk_frame_ticker_spec good = {.rate = fixed(60)};
    CHECK_EQ(tk_frame_ticker_create(NULL, &good, on_frame, &r, &ticker), -EINVAL);
    CHECK_EQ(tk_frame_ticker_create(loop, NULL, on_frame, &r, &ticker), -EINVAL);
    CHECK_EQ(tk_frame_ticker_create(loop, &good, NULL, &r, &ticker), -EINVAL);
    CHECK_EQ(tk_frame_ticker_create(loop, &good, on_frame, &r, NULL), -EINVAL);
    const tk_frame_rate_range bad[] = {
        {0, 60, 0},        {-1, 60, 0},        {NAN, 60, 0},     {30, NAN, 0},
        {30, INFINITY, 0}, {60, 30, 0},        {30, 60, 61},     {30, 60, 29},
        {30, 60, NAN},     {30, 2e9, 0},       {30, 60, -1},     {1e-300, 60, 1e-300},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tk_frame_ticker_spec spec = {.rate = bad[i]};
        CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &r, &ticker), -EINVAL);
    }
    tk_frame_ticker_spec flags = {.rate = fixed(60), .flags = 0x80};
    CHECK_EQ(tk_frame_ticker_create(loop, &flags, on_frame, &r, &ticker), -EINVAL);
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, 0); /* nothing was scheduled */
    CHECK(ticker == NULL);
    CHECK_EQ(tk_frame_ticker_destroy(NULL), -EINVAL);
    CHECK_EQ(tk_frame_ticker_set_paused(NULL, 1), -EINVAL);
    CHECK_EQ(tk_frame_ticker_set_rate(NULL, fixed(60)), -EINVAL);
    CHECK_EQ(tk_frame_ticker_set_modes(NULL, 1), -EINVAL);
    CHECK_EQ(tk_frame_ticker_get_info(NULL, NULL), -EINVAL);
    /* The extremes that are allowed: 1 ns periods, and a 1e-6 Hz floor. */
    tk_frame_rate_range fastest = {1e-6, 1e9, 0};
    tk_frame_ticker_spec extreme = {.rate = fastest};
    CHECK_EQ(tk_frame_ticker_create(loop, &extreme, on_frame, &r, &ticker), 0);
    CHECK_EQ(info_of(ticker).period_ns, 1);
    CHECK_EQ(tk_frame_ticker_get_info(ticker, NULL), -EINVAL);
    CHECK_EQ(tk_loop_advance(loop, 0, 100), 100);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* ---- Real clock: never early, fired, threads -------------------------------- */

static void stop_after(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame, void *context) {
    recorder *r = context;
    on_frame(loop, ticker, frame, context);
    if (r->count >= 40) tk_loop_stop(loop);
}

static void test_real_clock_never_early(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    tk_frame_ticker_spec spec = {.rate = fixed(200)};
    tk_frame_ticker *ticker = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, stop_after, &r, &ticker), 0);
    int64_t now;
    CHECK_EQ(tk_clock_now(TK_CLOCK_MONOTONIC, &now), 0);
    CHECK_EQ(tk_loop_run(loop, 0, now + 30000 * MS, 0), TK_RUN_STOPPED);
    CHECK_EQ(r.count, 40);
    CHECK_EQ(r.early, 0);
    uint64_t dropped = r.frames[0].dropped_frames;
    for (int i = 1; i < r.count; i++) {
        int64_t step = r.frames[i].timestamp_ns - r.frames[i - 1].timestamp_ns;
        CHECK(step > 0 && step % (5 * MS) == 0);
        CHECK_EQ((uint64_t)(step / (5 * MS)) - 1, r.frames[i].dropped_frames);
        CHECK(r.frames[i].now_ns >= r.frames[i].timestamp_ns);
        dropped += r.frames[i].dropped_frames;
    }
    CHECK_EQ(info_of(ticker).dropped_frames, dropped);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

typedef struct threaded {
    tk_loop *loop;
    tk_frame_ticker *ticker;
    recorder *r;
} threaded;

static void *run_loop(void *arg) {
    threaded *t = arg;
    int result = tk_loop_run(t->loop, 0, TK_FOREVER, 0);
    CHECK_EQ(result, TK_RUN_STOPPED);
    return NULL;
}

static void sleep_us(long us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void test_changes_from_another_thread(void) {
    static recorder r;
    recorder_init(&r);
    r.rate_changes = 1;
    threaded t = {.r = &r};
    CHECK_EQ(tk_loop_create(&t.loop), 0);
    CHECK_EQ(tk_loop_set_release_handler(t.loop, on_release), 0);
    tk_frame_ticker_spec spec = {.rate = fixed(2000)};
    CHECK_EQ(tk_frame_ticker_create(t.loop, &spec, on_frame, &r, &t.ticker), 0);
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, run_loop, &t), 0);
    /* Pause, resume and re-rate while frames come. */
    for (int i = 0; i < 200; i++) {
        CHECK_EQ(tk_frame_ticker_set_paused(t.ticker, i % 3 == 0), 0);
        if (i % 7 == 0) CHECK_EQ(tk_frame_ticker_set_rate(t.ticker, fixed(i % 2 ? 1000 : 2000)), 0);
        sleep_us(rng_below(&g_rng, 1500));
    }
    CHECK_EQ(tk_frame_ticker_set_paused(t.ticker, 0), 0);
    sleep_us(20000);
    CHECK_EQ(tk_frame_ticker_destroy(t.ticker), 0);
    int after_destroy = r.count;
    sleep_us(20000);
    CHECK_EQ(tk_loop_stop(t.loop), 0);
    CHECK_EQ(pthread_join(thread, NULL), 0);
    CHECK(r.count > 0);
    CHECK(r.count <= after_destroy + 1); /* at most the one already begun */
    CHECK_EQ(r.early, 0);
    for (int i = 1; i < r.count; i++) CHECK(r.frames[i].timestamp_ns > r.frames[i - 1].timestamp_ns);
    CHECK_EQ(atomic_load(&r.releases), 1);
    CHECK_EQ(atomic_load(&r.after_release), 0);
    CHECK_EQ(tk_loop_destroy(t.loop), 0);
    CHECK_EQ(atomic_load(&r.releases), 1);
}

static void test_destroy_races_frames(void) {
    for (int round = 0; round < 50; round++) {
        static recorder r;
        recorder_init(&r);
        threaded t = {.r = &r};
        CHECK_EQ(tk_loop_create(&t.loop), 0);
        CHECK_EQ(tk_loop_set_release_handler(t.loop, on_release), 0);
        tk_frame_ticker_spec spec = {.rate = fixed(10000)};
        CHECK_EQ(tk_frame_ticker_create(t.loop, &spec, on_frame, &r, &t.ticker), 0);
        pthread_t thread;
        CHECK_EQ(pthread_create(&thread, NULL, run_loop, &t), 0);
        sleep_us((long)rng_below(&g_rng, 3000));
        CHECK_EQ(tk_frame_ticker_destroy(t.ticker), 0);
        sleep_us(2000);
        CHECK_EQ(tk_loop_stop(t.loop), 0);
        CHECK_EQ(pthread_join(thread, NULL), 0);
        /* Released by now: at once, or when a callback in flight returned. */
        CHECK_EQ(atomic_load(&r.releases), 1);
        CHECK_EQ(atomic_load(&r.after_release), 0);
        CHECK_EQ(tk_loop_destroy(t.loop), 0);
        CHECK_EQ(atomic_load(&r.releases), 1);
    }
}

static void test_negative_and_huge_times(void) {
    static recorder r;
    recorder_init(&r);
    /* A manual loop that starts before zero. */
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, -1000 * MS), 0);
    tk_frame_ticker *ticker = start(loop, fixed(100), &r);
    CHECK_EQ(tk_loop_advance(loop, 0, 1000 * MS), 100);
    CHECK_EQ(r.frames[0].timestamp_ns, -990 * MS);
    CHECK_EQ(r.frames[99].timestamp_ns, 0);
    CHECK_EQ(info_of(ticker).dropped_frames, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);

    /* Near the end of time: the next grid point would pass INT64_MAX, so
     * it never comes, and targets saturate instead of wrapping. */
    static recorder late;
    recorder_init(&late);
    int64_t start_ns = INT64_MAX - 1500 * MS;
    CHECK_EQ(tk_loop_create_manual(&loop, start_ns), 0);
    ticker = start(loop, fixed(1), &late);
    CHECK_EQ(tk_loop_advance(loop, 0, 1400 * MS), 1);
    CHECK_EQ(late.frames[0].timestamp_ns, start_ns + 1000 * MS);
    CHECK_EQ(late.frames[0].target_timestamp_ns, INT64_MAX);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, INT64_MAX);
    CHECK_EQ(tk_loop_advance(loop, 0, 99 * MS), 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Moves the monotonic clock to the end of time from the ticker's first
 * frame: by more than INT64_MAX from a loop that started at INT64_MIN. */
static void jump_to_the_end(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame,
                            void *context) {
    (void)ticker;
    (void)frame;
    int *frames = context;
    if ((*frames)++ == 0) CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, INT64_MAX), 0);
}

/* Manual time over the whole int64 range. A 1 ns grid from INT64_MIN whose
 * clock is set to INT64_MAX gives one frame, with every point between
 * dropped, and then none (INT64_MAX never comes), created running or
 * resumed there; a callback may move time by more than INT64_MAX; and a
 * frame fired through the timer's handle when the next point lies past the
 * end of time is none. */
static void test_whole_range_of_time(void) {
    for (int paused = 0; paused <= 1; paused++) {
        static recorder r;
        recorder_init(&r);
        r.destroy_at = 3; /* so that frames without end (a wrapped grid) stop */
        tk_loop *loop = NULL;
        CHECK_EQ(tk_loop_create_manual(&loop, INT64_MIN), 0);
        tk_frame_ticker_spec spec = {.rate = fixed(1e9), .flags = paused ? TK_FRAME_PAUSED : 0};
        tk_frame_ticker *ticker = NULL;
        CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &r, &ticker), 0);
        CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, INT64_MAX), 0);
        if (paused) {
            CHECK_EQ(tk_frame_ticker_set_paused(ticker, 0), 0);
            /* The first point still ahead is past the end. */
            CHECK_EQ(info_of(ticker).next_timestamp_ns, INT64_MAX);
            CHECK_EQ(tk_loop_advance(loop, 0, 0), 0);
            CHECK_EQ(r.seen, 0);
        } else {
            CHECK_EQ(tk_loop_advance(loop, 0, 0), 1);
            CHECK_EQ(r.seen, 1);
            CHECK_EQ(r.frames[0].timestamp_ns, INT64_MAX);
            CHECK_EQ(r.frames[0].dropped_frames, UINT64_MAX - 1);
        }
        if (r.seen > r.destroy_at) {
            /* Destroyed by its callback. */
            CHECK_EQ(tk_loop_destroy(loop), 0);
            continue;
        }
        CHECK_EQ(info_of(ticker).next_timestamp_ns, INT64_MAX);
        CHECK_EQ(tk_loop_advance(loop, 0, 0), 0);
        CHECK_EQ(r.seen, 1 - paused);
        CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }

    /* A callback that takes time from INT64_MIN to INT64_MAX. */
    int frames = 0;
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, INT64_MIN), 0);
    tk_frame_ticker_spec spec = {.rate = fixed(60)};
    tk_frame_ticker *ticker = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, jump_to_the_end, &frames, &ticker), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 20 * MS), 1);
    CHECK_EQ(frames, 1);
    tk_frame_ticker_info info = info_of(ticker);
    CHECK_EQ(info.next_timestamp_ns, INT64_MAX);
    CHECK_EQ(info.error, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);

    /* A 100 MHz ticker 5 ns before the end: its first point would be past
     * INT64_MAX. Fired through its timer's handle with the clock at
     * INT64_MAX, it delivers no frame and counts nothing dropped. */
    static recorder end;
    recorder_init(&end);
    CHECK_EQ(tk_loop_create_manual(&loop, INT64_MAX - 5), 0);
    tk_timer_spec one = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = MS, .modes = TK_MODES(TK_MODE_DEFAULT)};
    tk_timer_id before = TK_TIMER_NONE;
    CHECK_EQ(tk_loop_schedule(loop, &one, noop_timer, NULL, &before), 0);
    ticker = start(loop, fixed(1e8), &end);
    CHECK_EQ(info_of(ticker).next_timestamp_ns, INT64_MAX);
    CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, INT64_MAX), 0);
    tk_timer_info timer;
    CHECK_EQ(tk_loop_timer_info(loop, before + 1, &timer), 0); /* the ticker's timer */
    CHECK_EQ(tk_loop_fire(loop, before + 1), 0);
    CHECK_EQ(end.seen, 0);
    info = info_of(ticker);
    CHECK_EQ(info.frames, 0);
    CHECK_EQ(info.dropped_frames, 0);
    CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_ladders(void) {
    static recorder r;
    recorder_init(&r);
    tk_loop *loop = manual_loop();
    struct {
        tk_frame_rate_range range;
        double rate;
    } cases[] = {
        {{1e-6, 1e9, 1}, 1},       /* a billion rungs: the preferred one is there */
        {{1, 120, 88}, 60},        /* 60 is nearer 88 than 120 is */
        {{1, 120, 100}, 120},      /* 120 is nearer 100 than 60 is */
        {{30, 120, 35}, 40},       /* 40 (k = 3) rather than 30 (k = 4) */
        {{59.94, 59.94, 0}, 59.94},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tk_frame_ticker_spec spec = {.rate = cases[i].range};
        tk_frame_ticker *ticker = NULL;
        CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &r, &ticker), 0);
        tk_frame_ticker_info info = info_of(ticker);
        double off = info.rate - cases[i].rate;
        if (!((off < 0 ? -off : off) < 1e-9 * cases[i].rate)) {
            PROPERTY_FAIL("case %zu: rate %.9g, expected %.9g", i, info.rate, cases[i].rate);
        } else {
            CHECK(1);
        }
        CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
    }
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A range whose maximum is more than 10^12 times its minimum adapts down to
 * its minimum and no further (it went on to rungs below it: 1 and 1,000
 * rungs below in these two ranges). Every frame here drops more than a
 * tenth of its grid points, and each is a window of its own. */
static void test_no_rung_below_the_minimum(void) {
    static recorder r;
    struct {
        tk_frame_rate_range range;
        int64_t period_ns;
        int frames;
    } cases[] = {
        {{1e-3, 1e9, 1e-3}, INT64_C(1000000000000), 10},
        {{1e-6, 1e9, 1e-6}, INT64_C(1000000000000000), 1100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        recorder_init(&r);
        tk_loop *loop = manual_loop();
        tk_frame_ticker *ticker = start(loop, cases[i].range, &r);
        CHECK_EQ(info_of(ticker).period_ns, cases[i].period_ns);
        for (int frame = 0; frame < cases[i].frames; frame++) {
            int64_t now;
            CHECK_EQ(tk_loop_now(loop, TK_CLOCK_MONOTONIC, &now), 0);
            /* Two and a half periods on: the next frame drops a grid point. */
            CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC,
                                             now + info_of(ticker).period_ns / 2 * 5),
                     0);
            CHECK_EQ(tk_loop_advance(loop, 0, 0), 1);
        }
        tk_frame_ticker_info info = info_of(ticker);
        CHECK_EQ(info.frames, cases[i].frames);
        CHECK_EQ(info.period_ns, cases[i].period_ns);
        CHECK(info.rate >= cases[i].range.minimum);
        CHECK_EQ(r.early, 0);
        CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
        CHECK_EQ(tk_loop_destroy(loop), 0);
    }
}

/* Fills the monotonic heap to its capacity with far-away timers while the
 * heap cannot grow, so that re-arming the ticker after this frame fails. */
static void fill_heap(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame, void *context) {
    recorder *r = context;
    on_frame(loop, ticker, frame, context);
    if (frame->index != 1) return;
    atomic_store(&g_fail_aligned_allocations, 1);
    tk_timer_spec far = {.clock = TK_CLOCK_MONOTONIC, .delay_ns = 3600 * 1000 * MS,
                         .modes = TK_MODES(TK_MODE_DEFAULT)};
    tk_timer_id id;
    int result;
    /* Their contexts go to the loop's release handler too: a recorder of their own. */
    static recorder sink;
    while ((result = tk_loop_schedule(loop, &far, noop_timer, &sink, &id)) == 0) r->fillers++;
    CHECK_EQ(result, -ENOMEM);
}

static void test_error_stops_the_ticker(void) {
    for (int destroy_loop_first = 0; destroy_loop_first < 2; destroy_loop_first++) {
        static recorder r;
        recorder_init(&r);
        tk_loop *loop = manual_loop();
        tk_frame_ticker_spec spec = {.rate = fixed(100)};
        tk_frame_ticker *ticker = NULL;
        CHECK_EQ(tk_frame_ticker_create(loop, &spec, fill_heap, &r, &ticker), 0);
        CHECK_EQ(tk_loop_advance(loop, 0, 25 * MS), 2);
        atomic_store(&g_fail_aligned_allocations, 0);
        CHECK(r.fillers > 0);
        tk_frame_ticker_info info = info_of(ticker);
        CHECK_EQ(info.error, -ENOMEM);
        CHECK_EQ(info.next_timestamp_ns, INT64_MAX);
        CHECK_EQ(info.frames, 2);
        /* Stopped: no frame, and every change reports the error. */
        CHECK_EQ(tk_loop_advance(loop, 0, 100 * MS), 0);
        CHECK_EQ(r.count, 2);
        CHECK_EQ(tk_frame_ticker_set_paused(ticker, 1), -ENOMEM);
        CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(50)), -ENOMEM);
        CHECK_EQ(tk_frame_ticker_set_modes(ticker, 0), -ENOMEM);
        CHECK_EQ(atomic_load(&r.releases), 0);
        if (destroy_loop_first) {
            /* The loop frees the stopped ticker and hands back its context. */
            CHECK_EQ(tk_loop_destroy(loop), 0);
            CHECK_EQ(atomic_load(&r.releases), 1);
        } else {
            /* Its release handler may not destroy the loop (-EBUSY), as
             * from any other release handler. */
            r.destroy_loop_in_release = 1;
            CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
            r.destroy_loop_in_release = 0;
            CHECK_EQ(r.destroy_loop_result, -EBUSY);
            CHECK_EQ(atomic_load(&r.releases), 1);
            CHECK_EQ(tk_loop_destroy(loop), 0);
            CHECK_EQ(atomic_load(&r.releases), 1);
        }
    }
}

/* The handle of the ticker's timer, which the library never gives out but
 * a caller can guess: with the ticker's the only live timer, it is the
 * live handle next to that of a timer scheduled after it. */
static tk_timer_id ticker_timer(tk_loop *loop) {
    tk_timer_spec later = {.delay_ns = 3600 * 1000 * MS};
    tk_timer_id probe;
    CHECK_EQ(tk_loop_schedule(loop, &later, noop_timer, NULL, &probe), 0);
    void *context;
    CHECK_EQ(tk_loop_cancel_take(loop, probe, &context), 1);
    tk_timer_info info;
    for (uint32_t d = 1; d <= 8; d++) {
        tk_timer_id id = (probe & ~(tk_timer_id)UINT32_MAX) | (uint32_t)((uint32_t)probe - d);
        if (tk_loop_timer_info(loop, id, &info) == 0) return id;
    }
    CHECK(!"the ticker's timer was found");
    return TK_TIMER_NONE;
}

/* Cancels the ticker's timer from the callback of frame 1. */
static tk_timer_id g_cancel_from_callback;
static void cancel_own_timer(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame,
                             void *context) {
    on_frame(loop, ticker, frame, context);
    if (frame->index == 1) CHECK_EQ(tk_loop_cancel(loop, g_cancel_from_callback), 0);
}

/* tk_loop_cancel, tk_loop_cancel_take or tk_loop_fire through a guessed
 * handle of a ticker's timer, or a cancel from its own callback: the
 * ticker is stopped as by an error (-ECANCELED), and says so. */
static void test_timer_taken_by_handle_stops_the_ticker(void) {
    enum { CANCEL, CANCEL_TAKE, FIRE, FIRE_DUE, FROM_CALLBACK, WAYS };
    for (int way = 0; way < WAYS; way++) {
        for (int destroy_loop_first = 0; destroy_loop_first < 2; destroy_loop_first++) {
            static recorder r;
            recorder_init(&r);
            tk_loop *loop = manual_loop();
            tk_frame_ticker_spec spec = {.rate = fixed(100)};
            tk_frame_ticker *ticker = NULL;
            CHECK_EQ(tk_frame_ticker_create(loop, &spec, way == FROM_CALLBACK ? cancel_own_timer
                                                                             : on_frame,
                                            &r, &ticker),
                     0);
            CHECK_EQ(tk_loop_advance(loop, 0, 15 * MS), 1); /* frame 0 at 10 ms */
            tk_timer_id timer = ticker_timer(loop);
            void *taken = &r;
            int frames = 1;
            switch (way) {
            case CANCEL: CHECK_EQ(tk_loop_cancel(loop, timer), 0); break;
            case CANCEL_TAKE:
                /* Never handed back. */
                CHECK_EQ(tk_loop_cancel_take(loop, timer, &taken), 0);
                CHECK(taken == &r);
                break;
            case FIRE: CHECK_EQ(tk_loop_fire(loop, timer), 0); break;
            case FIRE_DUE:
                /* Fired when its frame is due: the frame comes, then no more. */
                CHECK_EQ(tk_loop_set_manual_time(loop, TK_CLOCK_MONOTONIC, START + 20 * MS), 0);
                CHECK_EQ(tk_loop_fire(loop, timer), 0);
                frames = 2;
                break;
            case FROM_CALLBACK:
                g_cancel_from_callback = timer;
                CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 1); /* frame 1, which cancels */
                frames = 2;
                break;
            }
            CHECK_EQ(atomic_load(&r.count), frames);
            tk_loop_stats stats;
            CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
            CHECK_EQ(stats.pending, 0);
            CHECK_EQ(tk_loop_timer_info(loop, timer, &(tk_timer_info){0}), -ENOENT);
            tk_frame_ticker_info info = info_of(ticker);
            CHECK_EQ(info.error, -ECANCELED);
            CHECK_EQ(info.next_timestamp_ns, INT64_MAX);
            CHECK_EQ(info.paused, 0);
            CHECK_EQ(info.frames, frames);
            /* Stopped: no frame, and every change reports it. */
            CHECK_EQ(tk_loop_advance(loop, 0, 100 * MS), 0);
            CHECK_EQ(atomic_load(&r.count), frames);
            CHECK_EQ(tk_frame_ticker_set_paused(ticker, 1), -ECANCELED);
            CHECK_EQ(tk_frame_ticker_set_rate(ticker, fixed(50)), -ECANCELED);
            CHECK_EQ(tk_frame_ticker_set_modes(ticker, 0), -ECANCELED);
            CHECK_EQ(info_of(ticker).paused, 0);
            CHECK_EQ(atomic_load(&r.releases), 0);
            if (!destroy_loop_first) {
                CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
                CHECK_EQ(atomic_load(&r.releases), 1);
            }
            CHECK_EQ(tk_loop_destroy(loop), 0);
            CHECK_EQ(atomic_load(&r.releases), 1);
            CHECK_EQ(atomic_load(&r.after_release), 0);
        }
    }
}

/* tk_loop_reschedule through a guessed handle of a ticker's timer, in each
 * form a spec can take, is refused with -EPERM, and the ticker goes on as
 * if nothing had been asked: its frames stay on its grid, on time, and its
 * timer keeps the deadline, leeway and modes the ticker gave it. */
static void test_timer_reschedule_by_handle_is_refused(void) {
    const tk_timer_spec specs[] = {
        {.delay_ns = 3600 * 1000 * MS},                        /* far later */
        {.delay_ns = 1, .interval_ns = MS},                    /* repeating, at once */
        {.clock = TK_CLOCK_MONOTONIC, .leeway_ns = 500 * MS,   /* the same deadline, late */
         .flags = TK_TIMER_KEEP_DEADLINE},
        {.deadline_ns = START, .flags = TK_TIMER_ABSOLUTE | TK_TIMER_PRECISE},
        {.delay_ns = 5 * MS, .modes = 0},                      /* in its modes, earlier */
        {.delay_ns = 5 * MS, .modes = TK_MODES(3)},            /* in a mode it is not in */
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        static recorder r;
        recorder_init(&r);
        tk_loop *loop = manual_loop();
        tk_frame_ticker *ticker = start(loop, fixed(100), &r);
        CHECK_EQ(tk_loop_advance(loop, 0, 15 * MS), 1); /* frame 0 at 10 ms */
        tk_timer_id timer = ticker_timer(loop);
        tk_timer_info before, after;
        CHECK_EQ(tk_loop_timer_info(loop, timer, &before), 0);
        CHECK_EQ(tk_loop_reschedule(loop, timer, &specs[i]), -EPERM);
        CHECK_EQ(tk_loop_timer_info(loop, timer, &after), 0);
        CHECK_EQ(after.deadline_ns, before.deadline_ns);
        CHECK_EQ(after.interval_ns, 0);
        CHECK_EQ(after.leeway_ns, 0);
        CHECK_EQ(after.modes, before.modes);
        /* Frames 1 to 4 at 20, 30, 40 and 50 ms, each on time. */
        CHECK_EQ(tk_loop_advance(loop, 0, 40 * MS), 4);
        CHECK_EQ(atomic_load(&r.count), 5);
        for (int frame = 1; frame < 5; frame++) {
            CHECK_FRAME(&r, frame, (frame + 1) * 10, 0);
            CHECK_EQ(r.frames[frame].now_ns, r.frames[frame].timestamp_ns);
        }
        tk_frame_ticker_info info = info_of(ticker);
        CHECK_EQ(info.error, 0);
        CHECK_EQ(info.next_timestamp_ns, START + 60 * MS);
        CHECK_EQ(tk_frame_ticker_destroy(ticker), 0);
        CHECK_EQ(tk_loop_destroy(loop), 0);
        CHECK_EQ(atomic_load(&r.releases), 1);
    }
}

/* Holds its callback until the test opens the gate. */
static atomic_int g_gate, g_in_callback;
static void wait_at_gate(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame, void *context) {
    on_frame(loop, ticker, frame, context);
    atomic_store(&g_in_callback, 1);
    while (!atomic_load(&g_gate)) sleep_us(100);
}

static void test_destroy_while_a_callback_runs(void) {
    static recorder r;
    recorder_init(&r);
    atomic_store(&g_gate, 0);
    atomic_store(&g_in_callback, 0);
    threaded t = {.r = &r};
    CHECK_EQ(tk_loop_create(&t.loop), 0);
    CHECK_EQ(tk_loop_set_release_handler(t.loop, on_release), 0);
    tk_frame_ticker_spec spec = {.rate = fixed(1000)};
    CHECK_EQ(tk_frame_ticker_create(t.loop, &spec, wait_at_gate, &r, &t.ticker), 0);
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, run_loop, &t), 0);
    while (!atomic_load(&g_in_callback)) sleep_us(100);
    /* The callback is running on the loop's thread: destroy returns at
     * once, and the ticker is released only when that callback returns. */
    CHECK_EQ(tk_frame_ticker_destroy(t.ticker), 0);
    CHECK_EQ(atomic_load(&r.releases), 0);
    atomic_store(&g_gate, 1);
    sleep_us(20000);
    CHECK_EQ(tk_loop_stop(t.loop), 0);
    CHECK_EQ(pthread_join(thread, NULL), 0);
    CHECK_EQ(atomic_load(&r.releases), 1);
    CHECK_EQ(r.count, 1);
    CHECK_EQ(atomic_load(&r.after_release), 0);
    CHECK_EQ(tk_loop_destroy(t.loop), 0);
}

static const test_case tests[] = {
    {"bad_modes_from_callback", test_bad_modes_from_callback, 60},
    {"fixed_rate_grid", test_fixed_rate_grid, 60},
    {"rate_changes_before_the_first_frame", test_rate_changes_before_the_first_frame, 60},
    {"no_drift_over_many_frames", test_no_drift_over_many_frames, 60},
    {"long_callback_drops_frames", test_long_callback_drops_frames, 60},
    {"callback_ending_on_the_grid", test_callback_ending_on_the_grid, 60},
    {"late_loop_gets_latest_grid_point", test_late_loop_gets_latest_grid_point, 60},
    {"pause_and_resume_keep_the_grid", test_pause_and_resume_keep_the_grid, 60},
    {"pause_from_callback", test_pause_from_callback, 60},
    {"destroy_from_callback", test_destroy_from_callback, 60},
    {"rate_change_realigns", test_rate_change_realigns, 60},
    {"rate_change_anchors_at_the_latest_frame", test_rate_change_anchors_at_the_latest_frame, 60},
    {"rate_change_from_a_long_callback", test_rate_change_from_a_long_callback, 60},
    {"range_adapts", test_range_adapts, 60},
    {"preferred_rate_within_range", test_preferred_rate_within_range, 60},
    {"modes", test_modes, 60},
    {"created_paused", test_created_paused, 60},
    {"loop_destroy_releases", test_loop_destroy_releases, 60},
    {"bad_input", test_bad_input, 60},
    {"real_clock_never_early", test_real_clock_never_early, 120},
    {"changes_from_another_thread", test_changes_from_another_thread, 120},
    {"destroy_races_frames", test_destroy_races_frames, 120},
    {"negative_and_huge_times", test_negative_and_huge_times, 60},
    {"whole_range_of_time", test_whole_range_of_time, 60},
    {"ladders", test_ladders, 60},
    {"no_rung_below_the_minimum", test_no_rung_below_the_minimum, 60},
    {"error_stops_the_ticker", test_error_stops_the_ticker, 60},
    {"timer_taken_by_handle_stops_the_ticker", test_timer_taken_by_handle_stops_the_ticker, 60},
    {"timer_reschedule_by_handle_is_refused", test_timer_reschedule_by_handle_is_refused, 60},
    {"destroy_while_a_callback_runs", test_destroy_while_a_callback_runs, 60},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_frame_ticker", tests, sizeof tests / sizeof tests[0]);
}

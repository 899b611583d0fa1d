/*
 * A loop's common modes (tk_loop_add_common_modes, TK_TIMER_COMMON,
 * TK_FRAME_COMMON): a timer or frame ticker in them is in each mode made
 * common later too, keeping its deadline, whatever state it is in then:
 * pending, due and waiting for a mode, firing, or repeating inside its own
 * callback. On manual loops, so that every fire is exact (and one real loop,
 * woken in a mode made common while it sleeps). The loop's count
 * of pending timers per mode is read directly (white-box) after each change,
 * against a count made from tk_loop_timer_info.
 *
 * Usage: test_common_modes [seed] [--only=NAME]     (or env TK_SEED)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"
#include "loop_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "test_harness.h"

#define MS INT64_C(1000000)

enum { MODAL = 5, OTHER = 7 };

typedef struct fires {
    int count;
    tk_timer_id last;
} fires;

static void count_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop;
    (void)missed;
    fires *f = context;
    f->count++;
    f->last = id;
}

static tk_timer_id schedule(tk_loop *loop, int64_t delay, int64_t interval, tk_mode_set modes,
                            uint32_t flags, fires *f) {
    tk_timer_spec spec = {.delay_ns = delay, .interval_ns = interval, .modes = modes,
                          .flags = flags};
    tk_timer_id id = TK_TIMER_NONE;
    CHECK_EQ(tk_loop_schedule(loop, &spec, count_fire, f, &id), 0);
    return id;
}

static tk_timer_info info_of(tk_loop *loop, tk_timer_id id) {
    tk_timer_info info = {0};
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    return info;
}

/* The loop's per-mode counts of pending timers match the modes its timers
 * report (`ids`, every pending timer of the loop). */
static void check_mode_counts(tk_loop *loop, const tk_timer_id *ids, size_t count) {
    uint32_t expected[TK_MODE_COUNT] = {0};
    uint64_t pending = 0;
    for (size_t i = 0; i < count; i++) {
        tk_timer_info info;
        if (tk_loop_timer_info(loop, ids[i], &info) != 0) continue;
        pending++;
        for (unsigned mode = 0; mode < TK_MODE_COUNT; mode++) {
            if (info.modes & TK_MODES(mode)) expected[mode]++;
        }
    }
    tk_loop_stats stats;
    CHECK_EQ(tk_loop_get_stats(loop, &stats), 0);
    CHECK_EQ(stats.pending, pending);
    for (unsigned mode = 0; mode < TK_MODE_COUNT; mode++) {
        CHECK_EQ(loop->mode_timers[mode], expected[mode]);
    }
}

/* Timers in the common modes join a mode made common; others do not; the
 * deadlines stay; later common timers have it from the start. */
static void test_join(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    fires common = {0}, plain = {0}, both = {0}, later = {0};
    tk_timer_id ids[4];
    ids[0] = schedule(loop, 10 * MS, 0, 0, TK_TIMER_COMMON, &common);
    ids[1] = schedule(loop, 10 * MS, 0, TK_MODES(0) | TK_MODES(2), 0, &plain);
    ids[2] = schedule(loop, 20 * MS, 5 * MS, TK_MODES(3), TK_TIMER_COMMON, &both);
    CHECK_EQ(info_of(loop, ids[0]).modes, TK_MODES(0));
    CHECK_EQ(info_of(loop, ids[0]).flags, TK_TIMER_COMMON);
    CHECK_EQ(info_of(loop, ids[1]).flags, 0);
    CHECK_EQ(info_of(loop, ids[2]).modes, TK_MODES(0) | TK_MODES(3));
    check_mode_counts(loop, ids, 3);

    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL)), 0);
    CHECK_EQ(info_of(loop, ids[0]).modes, TK_MODES(0) | TK_MODES(MODAL));
    CHECK_EQ(info_of(loop, ids[0]).deadline_ns, 10 * MS);
    CHECK_EQ(info_of(loop, ids[1]).modes, TK_MODES(0) | TK_MODES(2));
    CHECK_EQ(info_of(loop, ids[2]).modes, TK_MODES(0) | TK_MODES(3) | TK_MODES(MODAL));
    CHECK_EQ(info_of(loop, ids[2]).deadline_ns, 20 * MS);
    CHECK_EQ(info_of(loop, ids[2]).interval_ns, 5 * MS);
    CHECK_EQ(info_of(loop, ids[2]).flags, TK_TIMER_COMMON);
    check_mode_counts(loop, ids, 3);
    /* Again, and with a mode common from the start: nothing changes. */
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL) | TK_MODES(0)), 0);
    check_mode_counts(loop, ids, 3);

    ids[3] = schedule(loop, 10 * MS, 0, TK_MODES(4), TK_TIMER_COMMON, &later);
    CHECK_EQ(info_of(loop, ids[3]).modes, TK_MODES(0) | TK_MODES(4) | TK_MODES(MODAL));
    check_mode_counts(loop, ids, 4);

    /* In the new common mode, the common timers fire; the other waits. */
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 20 * MS), 3);
    CHECK_EQ(common.count, 1);
    CHECK_EQ(later.count, 1);
    CHECK_EQ(both.count, 1);
    CHECK_EQ(plain.count, 0);
    CHECK_EQ(info_of(loop, ids[1]).waiting_for_mode, 1);
    CHECK_EQ(info_of(loop, ids[2]).deadline_ns, 25 * MS);
    check_mode_counts(loop, ids, 4);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A timer due while the loop ran another mode waits for one of its own;
 * once that mode is made common, the next pass in it fires the timer. */
static void test_waiting(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    fires f = {0};
    tk_timer_id id = schedule(loop, 10 * MS, 0, 0, TK_TIMER_COMMON, &f);
    /* The advance makes no pass at the end of its span; this one finds
     * the timer due, outside the mode. */
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(OTHER), 20 * MS), 0);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(OTHER), 0), 0);
    CHECK_EQ(info_of(loop, id).waiting_for_mode, 1);
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(OTHER)), 0);
    CHECK_EQ(info_of(loop, id).modes, TK_MODES(0) | TK_MODES(OTHER));
    CHECK_EQ(info_of(loop, id).deadline_ns, 10 * MS);
    check_mode_counts(loop, &id, 1);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(OTHER), 0), 1);
    CHECK_EQ(f.count, 1);
    CHECK_EQ(f.last, id);
    check_mode_counts(loop, &id, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* From callbacks: a repeating timer that makes a mode common in its own
 * callback has it, on its next deadline; a one-shot that does has it when
 * it schedules itself again. */
typedef struct in_callback {
    tk_timer_id repeating;
    tk_timer_id one_shot;
    int repeating_fires;
    int one_shot_fires;
    tk_timer_info seen;
    int seen_result;
    int revived;
} in_callback;

static void repeating_adds(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)missed;
    in_callback *c = context;
    if (c->repeating_fires++ > 0) return;
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL)), 0);
    c->seen_result = tk_loop_timer_info(loop, id, &c->seen);
}

static void one_shot_adds(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)missed;
    in_callback *c = context;
    if (c->one_shot_fires++ > 0) return;
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(OTHER)), 0);
    tk_timer_spec again = {.delay_ns = 10 * MS, .flags = TK_TIMER_COMMON};
    c->revived = tk_loop_reschedule(loop, id, &again);
}

/* A timer cancelled in its own callback, which then makes a mode common:
 * no longer pending, it is counted in no mode. */
static void cancel_then_add(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)missed;
    (void)context;
    CHECK_EQ(tk_loop_cancel(loop, id), 0);
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL)), 0);
    CHECK_EQ(loop->mode_timers[MODAL], 0);
    CHECK_EQ(loop->mode_timers[0], 0);
}

static void test_cancelled_in_callback(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    tk_timer_spec every = {.delay_ns = 10 * MS, .interval_ns = 10 * MS, .flags = TK_TIMER_COMMON};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &every, cancel_then_add, NULL, &id), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 1);
    check_mode_counts(loop, &id, 1);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 50 * MS), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static void test_from_callbacks(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    in_callback c = {0};
    tk_timer_spec every = {.delay_ns = 10 * MS, .interval_ns = 10 * MS, .flags = TK_TIMER_COMMON};
    CHECK_EQ(tk_loop_schedule(loop, &every, repeating_adds, &c, &c.repeating), 0);
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 1);
    CHECK_EQ(c.seen_result, 0);
    CHECK_EQ(c.seen.modes, TK_MODES(0) | TK_MODES(MODAL));
    CHECK_EQ(c.seen.deadline_ns, 20 * MS);
    CHECK_EQ(info_of(loop, c.repeating).deadline_ns, 20 * MS);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 10 * MS), 1);
    CHECK_EQ(c.repeating_fires, 2);
    CHECK_EQ(tk_loop_cancel(loop, c.repeating), 0);

    tk_timer_spec once = {.delay_ns = 10 * MS, .flags = TK_TIMER_COMMON};
    CHECK_EQ(tk_loop_schedule(loop, &once, one_shot_adds, &c, &c.one_shot), 0);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 10 * MS), 1);
    CHECK_EQ(c.revived, 0);
    CHECK_EQ(info_of(loop, c.one_shot).modes, TK_MODES(0) | TK_MODES(MODAL) | TK_MODES(OTHER));
    check_mode_counts(loop, &c.one_shot, 1);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(OTHER), 10 * MS), 1);
    CHECK_EQ(c.one_shot_fires, 2);
    check_mode_counts(loop, &c.one_shot, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A timer held in its heap (a reschedule gave it a deadline already due
 * during the pass going on) joins a mode made common later in that pass. */
typedef struct held_case {
    tk_timer_id held;
    int rescheduled;
    int added;
} held_case;

static void reschedule_into_past(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id;
    (void)missed;
    held_case *h = context;
    tk_timer_spec past = {.deadline_ns = 1, .interval_ns = 1000 * MS,
                          .flags = TK_TIMER_ABSOLUTE | TK_TIMER_COMMON};
    h->rescheduled = tk_loop_reschedule(loop, h->held, &past);
}

static void add_modal(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)id;
    (void)missed;
    held_case *h = context;
    h->added = tk_loop_add_common_modes(loop, TK_MODES(MODAL));
}

static void test_held(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    held_case h = {0};
    fires f = {0};
    tk_timer_spec soon = {.delay_ns = 10 * MS};
    tk_timer_id ids[3];
    CHECK_EQ(tk_loop_schedule(loop, &soon, reschedule_into_past, &h, &ids[0]), 0);
    ids[1] = h.held = schedule(loop, 100 * MS, 0, 0, TK_TIMER_COMMON, &f);
    CHECK_EQ(tk_loop_schedule(loop, &soon, add_modal, &h, &ids[2]), 0);
    /* The held timer fires at the next pass, at the same time, and is
     * re-armed on its grid, 1 s on, with the modes it had then. */
    CHECK_EQ(tk_loop_advance(loop, 0, 10 * MS), 3);
    CHECK_EQ(h.rescheduled, 0);
    CHECK_EQ(h.added, 0);
    CHECK_EQ(f.count, 1);
    CHECK_EQ(info_of(loop, h.held).modes, TK_MODES(0) | TK_MODES(MODAL));
    check_mode_counts(loop, ids, 3);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 1000 * MS), 1);
    CHECK_EQ(f.count, 2);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A timer deferred (due in a nested run while its own callback runs) joins
 * a mode its callback makes common. */
typedef struct deferred_case {
    int calls;
    int nested;
    int added;
} deferred_case;

static void defer_then_add(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)missed;
    deferred_case *d = context;
    if (d->calls++ > 0) return;
    tk_timer_spec past = {.deadline_ns = 1, .interval_ns = 1000 * MS,
                          .flags = TK_TIMER_ABSOLUTE | TK_TIMER_COMMON};
    CHECK_EQ(tk_loop_reschedule(loop, id, &past), 0);
    d->nested = tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT);
    d->added = tk_loop_add_common_modes(loop, TK_MODES(MODAL));
}

static void test_deferred(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    deferred_case d = {0};
    tk_timer_spec every = {.delay_ns = MS, .interval_ns = MS, .flags = TK_TIMER_COMMON};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &every, defer_then_add, &d, &id), 0);
    /* Deferred in the nested run, not re-entered; it fires once its
     * callback has returned, and is re-armed on its grid, 1 s on, with the
     * modes it had then. */
    CHECK_EQ(tk_loop_run(loop, 0, MS, 0), TK_RUN_TIMED_OUT);
    CHECK_EQ(d.nested, TK_RUN_PASSED);
    CHECK_EQ(d.added, 0);
    CHECK_EQ(d.calls, 2);
    CHECK_EQ(info_of(loop, id).modes, TK_MODES(0) | TK_MODES(MODAL));
    check_mode_counts(loop, &id, 1);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 1000 * MS), 1);
    CHECK_EQ(d.calls, 3);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* A reschedule without the flag takes a timer out of the common modes; a
 * precise common timer stays precise; bad calls change nothing. */
static void test_leaving_and_errors(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    fires f = {0};
    tk_timer_id ids[2];
    ids[0] = schedule(loop, 10 * MS, 0, 0, TK_TIMER_COMMON, &f);
    tk_timer_spec precise = {.delay_ns = 30 * MS, .flags = TK_TIMER_COMMON | TK_TIMER_PRECISE};
    CHECK_EQ(tk_loop_schedule(loop, &precise, count_fire, &f, &ids[1]), 0);
    tk_timer_spec keep = {.modes = TK_MODES(2), .flags = TK_TIMER_KEEP_DEADLINE};
    CHECK_EQ(tk_loop_reschedule(loop, ids[0], &keep), 0);
    CHECK_EQ(info_of(loop, ids[0]).modes, TK_MODES(2));
    CHECK_EQ(info_of(loop, ids[0]).flags, 0);

    CHECK_EQ(tk_loop_add_common_modes(NULL, TK_MODES(MODAL)), -EINVAL);
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES_INVALID), -EINVAL);
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL) | TK_MODES_INVALID), -EINVAL);
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(TK_MODE_COUNT)), -EINVAL);
    CHECK_EQ(info_of(loop, ids[1]).modes, TK_MODES(0));
    check_mode_counts(loop, ids, 2);

    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL)), 0);
    CHECK_EQ(info_of(loop, ids[0]).modes, TK_MODES(2));
    tk_timer_info info = info_of(loop, ids[1]);
    CHECK_EQ(info.modes, TK_MODES(0) | TK_MODES(MODAL));
    CHECK_EQ(info.flags, TK_TIMER_COMMON | TK_TIMER_PRECISE);
    CHECK_EQ(info.leeway_ns, 0);
    CHECK_EQ(info.deadline_ns, 30 * MS);
    check_mode_counts(loop, ids, 2);
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 30 * MS), 1);
    CHECK_EQ(f.last, ids[1]);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* Frame tickers: one made with TK_FRAME_COMMON delivers frames in a mode
 * made common later; one made without does not until it joins. */
static void on_frame(tk_loop *loop, tk_frame_ticker *ticker, const tk_frame *frame, void *context) {
    (void)loop;
    (void)ticker;
    (void)frame;
    ++*(int *)context;
}

static void test_frame_tickers(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create_manual(&loop, 0), 0);
    if (loop == NULL) return;
    int common_frames = 0, plain_frames = 0;
    tk_frame_ticker_spec spec = {.rate = {100, 100, 100}, .flags = TK_FRAME_COMMON};
    tk_frame_ticker *common = NULL, *plain = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &common_frames, &common), 0);
    spec.flags = 0;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &plain_frames, &plain), 0);
    spec.flags = 0x4;
    tk_frame_ticker *refused = NULL;
    CHECK_EQ(tk_frame_ticker_create(loop, &spec, on_frame, &plain_frames, &refused), -EINVAL);
    if (common == NULL || plain == NULL) return;

    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL)), 0);
    tk_frame_ticker_info info;
    CHECK_EQ(tk_frame_ticker_get_info(common, &info), 0);
    CHECK_EQ(info.modes, TK_MODES(0) | TK_MODES(MODAL));
    CHECK_EQ(tk_frame_ticker_get_info(plain, &info), 0);
    CHECK_EQ(info.modes, TK_MODES(0));
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(MODAL), 10 * MS), 1);
    CHECK_EQ(common_frames, 1);
    CHECK_EQ(plain_frames, 0);

    CHECK_EQ(tk_frame_ticker_join_common_modes(NULL), -EINVAL);
    CHECK_EQ(tk_frame_ticker_join_common_modes(plain), 0);
    CHECK_EQ(tk_frame_ticker_join_common_modes(plain), 0);
    CHECK_EQ(tk_frame_ticker_get_info(plain, &info), 0);
    CHECK_EQ(info.modes, TK_MODES(0) | TK_MODES(MODAL));
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(OTHER)), 0);
    CHECK_EQ(tk_frame_ticker_get_info(plain, &info), 0);
    CHECK_EQ(info.modes, TK_MODES(0) | TK_MODES(MODAL) | TK_MODES(OTHER));
    /* The plain ticker's frame at 10 ms waited for a mode of its own: the
     * pass at the start of the span delivers it, then both deliver the
     * frame at 20 ms. */
    CHECK_EQ(tk_loop_advance(loop, TK_MODES(OTHER), 10 * MS), 3);
    CHECK_EQ(common_frames, 2);
    CHECK_EQ(plain_frames, 2);
    CHECK_EQ(tk_frame_ticker_destroy(common), 0);
    CHECK_EQ(tk_frame_ticker_destroy(plain), 0);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* On a real loop: a run sleeping in a mode wakes for a timer that came due
 * outside it once the mode is made common, and fires it then, not before. */
typedef struct modal_run {
    tk_loop *loop;
    int result;
} modal_run;

/* With no deadline: a run never woken for the timer would wait until the
 * test's own time limit ends it, failing. */
static void *run_modal(void *arg) {
    modal_run *run = arg;
    run->result = tk_loop_run(run->loop, TK_MODES(MODAL), TK_FOREVER, 0);
    return NULL;
}

static int g_made_common;
static int g_fired_after_made_common;

static void stop_on_fire(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    count_fire(loop, id, missed, context);
    g_fired_after_made_common = __atomic_load_n(&g_made_common, __ATOMIC_ACQUIRE);
    CHECK_EQ(tk_loop_stop(loop), 0);
}

static void test_wakes_sleeping_run(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    if (loop == NULL) return;
    fires f = {0};
    tk_timer_spec spec = {.delay_ns = 10 * MS, .flags = TK_TIMER_COMMON};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &spec, stop_on_fire, &f, &id), 0);
    g_made_common = 0;
    g_fired_after_made_common = 0;
    modal_run run = {loop, 0};
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, run_modal, &run), 0);
    /* Past the deadline: the run, in a mode the timer is not in, sleeps on
     * (it has no timer of its own mode to wake for). */
    struct timespec pause = {0, 50 * MS};
    nanosleep(&pause, NULL);
    __atomic_store_n(&g_made_common, 1, __ATOMIC_RELEASE);
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL)), 0);
    CHECK_EQ(pthread_join(thread, NULL), 0);
    CHECK_EQ(run.result, TK_RUN_STOPPED);
    CHECK_EQ(f.count, 1);
    CHECK_EQ(g_fired_after_made_common, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

/* The same with the timer parked: a timer of the run's mode, due after the
 * common one, wakes the run, whose pass finds the common one due and parks
 * it (waiting for a mode of its own); made common, it wakes the run again
 * and fires. */
static void test_wakes_run_for_parked(void) {
    tk_loop *loop = NULL;
    CHECK_EQ(tk_loop_create(&loop), 0);
    if (loop == NULL) return;
    fires common = {0}, nudge = {0};
    tk_timer_spec spec = {.delay_ns = 10 * MS, .flags = TK_TIMER_COMMON};
    tk_timer_id id;
    CHECK_EQ(tk_loop_schedule(loop, &spec, stop_on_fire, &common, &id), 0);
    (void)schedule(loop, 30 * MS, 0, TK_MODES(MODAL), 0, &nudge);
    g_made_common = 0;
    g_fired_after_made_common = 0;
    modal_run run = {loop, 0};
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, run_modal, &run), 0);
    /* Until the run has parked it (no bound: a slow machine only waits). */
    struct timespec pause = {0, 5 * MS};
    tk_timer_info info = {0};
    while (tk_loop_timer_info(loop, id, &info) == 0 && !info.waiting_for_mode) {
        nanosleep(&pause, NULL);
    }
    CHECK_EQ(info.waiting_for_mode, 1);
    __atomic_store_n(&g_made_common, 1, __ATOMIC_RELEASE);
    CHECK_EQ(tk_loop_add_common_modes(loop, TK_MODES(MODAL)), 0);
    CHECK_EQ(pthread_join(thread, NULL), 0);
    CHECK_EQ(run.result, TK_RUN_STOPPED);
    CHECK_EQ(common.count, 1);
    CHECK_EQ(g_fired_after_made_common, 1);
    CHECK_EQ(tk_loop_destroy(loop), 0);
}

static const test_case tests[] = {
    {"join", test_join, 60},
    {"waiting", test_waiting, 60},
    {"from_callbacks", test_from_callbacks, 60},
    {"cancelled_in_callback", test_cancelled_in_callback, 60},
    {"held", test_held, 60},
    {"deferred", test_deferred, 60},
    {"leaving_and_errors", test_leaving_and_errors, 60},
    {"frame_tickers", test_frame_tickers, 60},
    {"wakes_sleeping_run", test_wakes_sleeping_run, 60},
    {"wakes_run_for_parked", test_wakes_run_for_parked, 120},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_common_modes", tests, sizeof tests / sizeof tests[0]);
}

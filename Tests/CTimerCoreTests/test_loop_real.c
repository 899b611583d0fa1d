/*
 * Tests of the real-clock loop (tk_loop_create).
 *
 * The machine is shared and noisy, so nothing here bounds how LATE a timer
 * fires (beyond limits of many seconds that only catch a hung loop). What is
 * checked: that timers fire at all, never before their deadline (each
 * callback reads the timer's clock itself with clock_gettime), in deadline
 * order, the right number of times, in the right modes, and that runs return
 * the documented results. Exact timing is the business of the manual loop.
 *
 * Usage: test_loop_real [seed] [--only=NAME]     (or env TK_SEED)
 *   --only=NAME runs the tests whose name contains NAME, e.g. --only=stress.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "CTimerCore.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define US 1000LL
#define MS 1000000LL
#define SEC 1000000000LL

/* ------------------------------------------------------------------------
 * Bookkeeping
 * ------------------------------------------------------------------------ */

#include "test_harness.h"

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

static const char *const clock_names[TK_CLOCK_COUNT] = {"MONOTONIC", "BOOTTIME",
                                                        "REALTIME"};

/* The clock read directly, not through the library under test. */
static int64_t sys_now(tk_clock c) {
    static const clockid_t ids[TK_CLOCK_COUNT] = {CLOCK_MONOTONIC, CLOCK_BOOTTIME,
                                                  CLOCK_REALTIME};
    struct timespec ts;
    clock_gettime(ids[c], &ts);
    return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static void sleep_ns(int64_t ns) {
    struct timespec ts = {(time_t)(ns / SEC), (long)(ns % SEC)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static tk_timer_spec mkspec(tk_clock clock, int64_t deadline, int64_t interval,
                            int64_t leeway, tk_mode_set modes, uint32_t flags) {
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

static tk_timer_id sched(tk_loop *loop, tk_timer_spec spec, tk_timer_fn fn, void *ctx) {
    tk_timer_id id = TK_TIMER_NONE;
    int rc = tk_loop_schedule(loop, &spec, fn, ctx, &id);
    CHECK_EQ(rc, 0);
    CHECK(id != TK_TIMER_NONE);
    return id;
}

/* Schedules a timer `delay` ns from now on its clock and returns its absolute
 * deadline as the loop reports it, after checking that it lies between the
 * clock readings taken just before and just after the call. */
static int64_t sched_rel(tk_loop *loop, tk_clock clock, int64_t delay,
                         int64_t interval, int64_t leeway, tk_mode_set modes,
                         tk_timer_fn fn, void *ctx, tk_timer_id *out) {
    int64_t before = sys_now(clock);
    tk_timer_id id = sched(loop, mkspec(clock, delay, interval, leeway, modes, 0), fn, ctx);
    int64_t after = sys_now(clock);
    tk_timer_info info;
    memset(&info, 0, sizeof info);
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(info.clock, clock);
    CHECK_GE(info.deadline_ns, before + delay);
    CHECK_GE(after + delay, info.deadline_ns);
    if (out) *out = id;
    return info.deadline_ns;
}

static tk_loop *new_loop(void) {
    tk_loop *loop = NULL;
    int rc = tk_loop_create(&loop);
    CHECK_EQ(rc, 0);
    CHECK(loop != NULL);
    if (!loop) {
        fprintf(stderr, "cannot create a loop: %s\n", strerror(-rc));
        exit(1);
    }
    return loop;
}

static void free_loop(tk_loop *loop) { CHECK_EQ(tk_loop_destroy(loop), 0); }

/* Runs `loop` in `mode` for at most `ns` nanoseconds of monotonic time. */
static int run_for(tk_loop *loop, unsigned mode, int64_t ns) {
    return tk_loop_run(loop, TK_MODES(mode), sys_now(TK_CLOCK_MONOTONIC) + ns, 0);
}

static tk_loop_stats stats_of(tk_loop *loop) {
    tk_loop_stats st;
    memset(&st, 0, sizeof st);
    CHECK_EQ(tk_loop_get_stats(loop, &st), 0);
    return st;
}

/* A generous limit for "the loop should get there": only a hung or broken
 * loop takes this long. */
#define PATIENCE (20 * SEC)

/* ------------------------------------------------------------------------
 * One-shot timers that log when and in which order they fired
 * ------------------------------------------------------------------------ */

typedef struct shot_group {
    int fired;
    int target; /* stop the loop when this many fired (0: never) */
    int next_order;
} shot_group;

typedef struct shot {
    shot_group *group;
    tk_timer_id id;
    tk_clock clock;
    int64_t deadline; /* absolute, on `clock` */
    int64_t key;      /* expected order: by key, then by index */
    int index;
    int64_t fired_at;
    int order;
    int count;
    int wrong_id;
    uint64_t missed;
} shot;

static void shot_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    shot *s = ctx;
    s->fired_at = sys_now(s->clock);
    s->count++;
    s->missed = missed;
    if (s->id != TK_TIMER_NONE && id != s->id) s->wrong_id++;
    s->order = s->group->next_order++;
    s->group->fired++;
    if (s->group->target > 0 && s->group->fired == s->group->target) tk_loop_stop(loop);
}

/* Checks that every shot fired once, never early, in (key, index) order. */
static void check_shots(shot *shots, int n) {
    for (int i = 0; i < n; i++) {
        CHECK_EQ(shots[i].count, 1);
        CHECK_EQ(shots[i].missed, 0);
        CHECK_EQ(shots[i].wrong_id, 0);
        CHECK_GE(shots[i].fired_at, shots[i].deadline);
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            int before = shots[i].key < shots[j].key ||
                         (shots[i].key == shots[j].key && shots[i].index < shots[j].index);
            if (before && shots[i].count == 1 && shots[j].count == 1)
                CHECK_LT(shots[i].order, shots[j].order);
        }
    }
}

static void test_oneshot_order_on(tk_clock clock) {
    enum { N = 14 };
    tk_loop *loop = new_loop();
    shot_group group = {0, N, 0};
    shot shots[N];
    memset(shots, 0, sizeof shots);
    for (int i = 0; i < N; i++) {
        shot *s = &shots[i];
        s->group = &group;
        s->clock = clock;
        s->index = i;
        int64_t delay = 2 * MS + (int64_t)rng_below(&g_rng, 40 * MS);
        int kind = (int)rng_below(&g_rng, 3);
        if (kind == 0) {
            s->deadline = sched_rel(loop, clock, delay, 0, 0, TK_MODES(0), shot_fn, s, &s->id);
        } else {
            /* Absolute; sometimes the very deadline of an earlier absolute
             * timer, so that equal deadlines must come out in the order they
             * were scheduled. */
            int64_t deadline = sys_now(clock) + delay;
            if (kind == 2 && i > 0) {
                int j = (int)rng_below(&g_rng, (uint64_t)i);
                deadline = shots[j].deadline;
            }
            s->deadline = deadline;
            s->id = sched(loop, mkspec(clock, deadline, 0, 0, TK_MODES(0), TK_TIMER_ABSOLUTE),
                          shot_fn, s);
            tk_timer_info info;
            CHECK_EQ(tk_loop_timer_info(loop, s->id, &info), 0);
            CHECK_EQ(info.deadline_ns, deadline);
            CHECK_EQ(info.interval_ns, 0);
            CHECK_EQ(info.leeway_ns, 0);
            CHECK_EQ(info.modes, TK_MODES(0));
            CHECK_EQ(info.waiting_for_mode, 0);
        }
        s->key = s->deadline;
    }
    CHECK_EQ(stats_of(loop).pending, N);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    check_shots(shots, N);
    tk_loop_stats st = stats_of(loop);
    CHECK_EQ(st.pending, 0);
    CHECK_EQ(st.fired, N);
    CHECK_GE(st.arms, 1);
    for (int i = 0; i < N; i++) CHECK_EQ(tk_loop_cancel(loop, shots[i].id), -ENOENT);
    free_loop(loop);
}

static void test_oneshot_order(void) {
    for (int c = 0; c < TK_CLOCK_COUNT; c++) test_oneshot_order_on((tk_clock)c);
}

static void test_equal_deadlines(void) {
    enum { N = 10 };
    for (int c = 0; c < TK_CLOCK_COUNT; c++) {
        tk_loop *loop = new_loop();
        shot_group group = {0, N, 0};
        shot shots[N];
        memset(shots, 0, sizeof shots);
        int64_t deadline = sys_now((tk_clock)c) + 15 * MS;
        for (int i = 0; i < N; i++) {
            shots[i] = (shot){.group = &group, .clock = (tk_clock)c, .deadline = deadline,
                              .key = deadline, .index = i};
            shots[i].id = sched(loop, mkspec((tk_clock)c, deadline, 0, 0, TK_MODES(0),
                                             TK_TIMER_ABSOLUTE),
                                shot_fn, &shots[i]);
        }
        CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
        check_shots(shots, N);
        for (int i = 0; i < N; i++) CHECK_EQ(shots[i].order, i);
        free_loop(loop);
    }
}

/* Timers on different clocks, 25 ms apart: the order follows the delays. */
static void test_mixed_clocks(void) {
    enum { N = 9 };
    tk_loop *loop = new_loop();
    shot_group group = {0, N, 0};
    shot shots[N];
    memset(shots, 0, sizeof shots);
    int perm[N];
    for (int i = 0; i < N; i++) perm[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = (int)rng_below(&g_rng, (uint64_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < N; i++) {
        shot *s = &shots[i];
        int rank = perm[i];
        s->group = &group;
        s->clock = (tk_clock)rng_below(&g_rng, TK_CLOCK_COUNT);
        s->index = i;
        s->key = rank;
        s->deadline = sched_rel(loop, s->clock, 10 * MS + rank * 25 * MS, 0, 0, TK_MODES(0),
                                shot_fn, s, &s->id);
    }
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    check_shots(shots, N);
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * Repeating timers
 * ------------------------------------------------------------------------ */

typedef struct rep {
    tk_timer_id id;
    tk_clock clock;
    int64_t d0, interval;
    int64_t k; /* grid index of the next fire */
    int fires;
    int stop_after;
    int cancel_at;
    int cancel_rc;
    int early;
    int info_bad;
    int wrong_id;
    uint64_t total_missed;
} rep;

static void rep_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    rep *r = ctx;
    int64_t now = sys_now(r->clock);
    if (id != r->id) r->wrong_id++;
    r->k += (int64_t)missed;
    r->total_missed += missed;
    if (now < r->d0 + r->k * r->interval) r->early++;
    r->k++;
    /* Re-armed before the callback: the next grid point is in force. */
    tk_timer_info info;
    if (tk_loop_timer_info(loop, id, &info) != 0 ||
        info.deadline_ns != r->d0 + r->k * r->interval || info.interval_ns != r->interval)
        r->info_bad++;
    r->fires++;
    if (r->fires == r->cancel_at) r->cancel_rc = tk_loop_cancel(loop, id);
    if (r->fires == r->stop_after) tk_loop_stop(loop);
}

static void test_repeating(void) {
    for (int c = 0; c < TK_CLOCK_COUNT; c++) {
        tk_loop *loop = new_loop();
        rep r;
        memset(&r, 0, sizeof r);
        r.clock = (tk_clock)c;
        r.interval = 12 * MS;
        r.stop_after = 5;
        r.cancel_at = -1;
        if (c % 2 == 0) {
            r.d0 = sys_now(r.clock) + 5 * MS;
            r.id = sched(loop, mkspec(r.clock, r.d0, r.interval, 0, TK_MODES(0), TK_TIMER_ABSOLUTE),
                         rep_fn, &r);
        } else {
            r.d0 = sched_rel(loop, r.clock, 5 * MS, r.interval, 0, TK_MODES(0), rep_fn, &r, &r.id);
        }
        CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
        CHECK_EQ(r.fires, 5);
        CHECK_EQ(r.early, 0);
        CHECK_EQ(r.info_bad, 0);
        CHECK_EQ(r.wrong_id, 0);
        /* Still scheduled, on its grid. */
        tk_timer_info info;
        CHECK_EQ(tk_loop_timer_info(loop, r.id, &info), 0);
        CHECK_EQ(info.deadline_ns, r.d0 + r.k * r.interval);
        CHECK_EQ(stats_of(loop).pending, 1);
        /* Runs on where it left off. */
        r.stop_after = 7;
        CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
        CHECK_EQ(r.fires, 7);
        CHECK_EQ(r.early, 0);
        CHECK_EQ(r.info_bad, 0);
        CHECK_EQ(tk_loop_cancel(loop, r.id), 0);
        CHECK_EQ(tk_loop_cancel(loop, r.id), -ENOENT);
        CHECK_EQ(stats_of(loop).pending, 0);
        free_loop(loop);
    }
}

static void test_cancel_in_own_callback(void) {
    tk_loop *loop = new_loop();
    rep r;
    memset(&r, 0, sizeof r);
    r.clock = TK_CLOCK_MONOTONIC;
    r.interval = 8 * MS;
    r.cancel_at = 3;
    r.cancel_rc = 1;
    r.d0 = sched_rel(loop, r.clock, 2 * MS, r.interval, 0, TK_MODES(0), rep_fn, &r, &r.id);
    /* Nothing stops the loop: it must run out its time with the timer gone. */
    CHECK_EQ(run_for(loop, 0, 200 * MS), TK_RUN_TIMED_OUT);
    CHECK_EQ(r.fires, 3);
    CHECK_EQ(r.cancel_rc, 0);
    CHECK_EQ(r.early, 0);
    CHECK_EQ(tk_loop_cancel(loop, r.id), -ENOENT);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, r.id, &info), -ENOENT);
    CHECK_EQ(stats_of(loop).pending, 0);
    free_loop(loop);
}

/* A one-shot timer that reschedules itself from its own callback once. */
typedef struct revive {
    tk_timer_id id;
    int fires;
    int resched_rc;
    int64_t second_deadline;
    int64_t fired_at[4];
} revive;

static void revive_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)missed;
    revive *r = ctx;
    if (r->fires < 4) r->fired_at[r->fires] = sys_now(TK_CLOCK_MONOTONIC);
    r->fires++;
    if (r->fires == 1) {
        tk_timer_spec s = mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0);
        int64_t before = sys_now(TK_CLOCK_MONOTONIC);
        r->resched_rc = tk_loop_reschedule(loop, id, &s);
        tk_timer_info info;
        if (tk_loop_timer_info(loop, id, &info) == 0 && info.deadline_ns >= before + 5 * MS)
            r->second_deadline = info.deadline_ns;
        else
            r->second_deadline = INT64_MIN;
    } else {
        tk_loop_stop(loop);
    }
}

static void test_reschedule(void) {
    tk_loop *loop = new_loop();

    /* A far one-shot moved near, and onto another clock. */
    shot_group group = {0, 1, 0};
    shot s = {.group = &group, .clock = TK_CLOCK_REALTIME};
    s.id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 60 * SEC, 0, 0, TK_MODES(0), 0), shot_fn, &s);
    tk_timer_spec near = mkspec(TK_CLOCK_REALTIME, 10 * MS, 0, 0, TK_MODES(0), 0);
    int64_t before = sys_now(TK_CLOCK_REALTIME);
    CHECK_EQ(tk_loop_reschedule(loop, s.id, &near), 0);
    int64_t after = sys_now(TK_CLOCK_REALTIME);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, s.id, &info), 0);
    CHECK_EQ(info.clock, TK_CLOCK_REALTIME);
    CHECK_GE(info.deadline_ns, before + 10 * MS);
    CHECK_GE(after + 10 * MS, info.deadline_ns);
    s.deadline = info.deadline_ns;
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(s.count, 1);
    CHECK_EQ(s.wrong_id, 0);
    CHECK_GE(s.fired_at, s.deadline);
    CHECK_EQ(tk_loop_cancel(loop, s.id), -ENOENT);

    /* A far one-shot turned into a repeating timer. */
    rep r;
    memset(&r, 0, sizeof r);
    r.clock = TK_CLOCK_BOOTTIME;
    r.interval = 6 * MS;
    r.stop_after = 3;
    r.cancel_at = -1;
    r.id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 60 * SEC, 0, 0, TK_MODES(0), 0), rep_fn, &r);
    r.d0 = sys_now(TK_CLOCK_BOOTTIME) + 3 * MS;
    tk_timer_spec every = mkspec(TK_CLOCK_BOOTTIME, r.d0, r.interval, 0, TK_MODES(0),
                                 TK_TIMER_ABSOLUTE);
    CHECK_EQ(tk_loop_reschedule(loop, r.id, &every), 0);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(r.fires, 3);
    CHECK_EQ(r.early, 0);
    CHECK_EQ(r.info_bad, 0);
    CHECK_EQ(r.wrong_id, 0);
    CHECK_EQ(tk_loop_cancel(loop, r.id), 0);

    /* A one-shot revived from its own callback fires again. */
    revive v;
    memset(&v, 0, sizeof v);
    v.id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 2 * MS, 0, 0, TK_MODES(0), 0), revive_fn, &v);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(v.fires, 2);
    CHECK_EQ(v.resched_rc, 0);
    CHECK(v.second_deadline != INT64_MIN);
    CHECK_GE(v.fired_at[1], v.second_deadline);
    CHECK_EQ(tk_loop_timer_info(loop, v.id, &info), -ENOENT);
    CHECK_EQ(stats_of(loop).pending, 0);
    free_loop(loop);
}

/* tk_loop_fire runs the callback at once on the calling thread. */
typedef struct fire_probe {
    tk_timer_id id;
    int calls;
    uint64_t missed;
    int same_thread;
    int info_rc;
    pthread_t caller;
} fire_probe;

static void fire_probe_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    fire_probe *p = ctx;
    tk_timer_info info;
    p->calls++;
    p->missed = missed;
    p->same_thread = pthread_equal(pthread_self(), p->caller) && id == p->id;
    p->info_rc = tk_loop_timer_info(loop, id, &info);
}

static void test_fire(void) {
    tk_loop *loop = new_loop();
    fire_probe once = {.caller = pthread_self(), .info_rc = 1};
    once.id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 60 * SEC, 0, 0, TK_MODES(0), 0),
                    fire_probe_fn, &once);
    CHECK_EQ(tk_loop_fire(loop, once.id), 0);
    CHECK_EQ(once.calls, 1);
    CHECK_EQ(once.missed, 0);
    CHECK(once.same_thread);
    CHECK_EQ(once.info_rc, -ENOENT); /* cancelled before the callback */
    CHECK_EQ(tk_loop_fire(loop, once.id), -ENOENT);
    CHECK_EQ(tk_loop_cancel(loop, once.id), -ENOENT);
    CHECK_EQ(once.calls, 1);

    fire_probe every = {.caller = pthread_self(), .info_rc = 1};
    int64_t d = sys_now(TK_CLOCK_REALTIME) + 60 * SEC;
    every.id = sched(loop, mkspec(TK_CLOCK_REALTIME, d, SEC, 0, TK_MODES(0), TK_TIMER_ABSOLUTE),
                     fire_probe_fn, &every);
    CHECK_EQ(tk_loop_fire(loop, every.id), 0);
    CHECK_EQ(tk_loop_fire(loop, every.id), 0);
    CHECK_EQ(every.calls, 2);
    CHECK_EQ(every.missed, 0);
    CHECK(every.same_thread);
    CHECK_EQ(every.info_rc, 0);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, every.id, &info), 0);
    CHECK_EQ(info.deadline_ns, d); /* keeps its schedule */
    CHECK_EQ(info.interval_ns, SEC);
    CHECK_EQ(stats_of(loop).pending, 1);
    /* A run does not fire it again: its deadline is a minute away. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(every.calls, 2);
    CHECK_EQ(tk_loop_cancel(loop, every.id), 0);
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * Leeway
 * ------------------------------------------------------------------------ */

static void test_leeway(void) {
    enum { N = 10 };
    tk_loop *loop = new_loop();
    shot_group group = {0, N, 0};
    shot shots[N];
    memset(shots, 0, sizeof shots);
    /* Deadlines 2 ms apart, each allowed to be 100 ms late: one wake-up at
     * the earliest deadline + leeway serves them all. */
    int64_t base = sys_now(TK_CLOCK_MONOTONIC) + 20 * MS;
    for (int i = 0; i < N; i++) {
        shot *s = &shots[i];
        *s = (shot){.group = &group, .clock = TK_CLOCK_MONOTONIC, .index = i};
        s->deadline = s->key = base + i * 2 * MS;
        s->id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, s->deadline, 0, 100 * MS, TK_MODES(0),
                                   TK_TIMER_ABSOLUTE),
                      shot_fn, s);
        tk_timer_info info;
        CHECK_EQ(tk_loop_timer_info(loop, s->id, &info), 0);
        CHECK_EQ(info.leeway_ns, 100 * MS);
    }
    tk_loop_stats st0 = stats_of(loop);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    tk_loop_stats st1 = stats_of(loop);
    check_shots(shots, N);
    CHECK_GE(st1.wakeups - st0.wakeups, 1);
    CHECK_LT(st1.wakeups - st0.wakeups, N);

    /* Leeway on the other clocks: never early either. */
    for (int c = 1; c < TK_CLOCK_COUNT; c++) {
        shot_group g2 = {0, 3, 0};
        shot more[3];
        for (int i = 0; i < 3; i++) {
            more[i] = (shot){.group = &g2, .clock = (tk_clock)c, .index = i};
            more[i].deadline = more[i].key =
                sched_rel(loop, (tk_clock)c, 5 * MS + i * MS, 0, 30 * MS, TK_MODES(0), shot_fn,
                          &more[i], &more[i].id);
        }
        CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
        check_shots(more, 3);
    }

    /* A repeating timer's leeway is clamped to half its interval. */
    tk_timer_id id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, SEC, 10 * MS, SEC, TK_MODES(0), 0),
                           shot_fn, &shots[0]);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(info.leeway_ns, 5 * MS);
    CHECK_EQ(tk_loop_cancel(loop, id), 0);
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * tk_loop_run results
 * ------------------------------------------------------------------------ */

static void test_run_results(void) {
    tk_loop *loop = new_loop();

    /* until_ns with nothing scheduled: times out, not before until_ns. */
    int64_t until = sys_now(TK_CLOCK_MONOTONIC) + 30 * MS;
    CHECK_EQ(tk_loop_run(loop, 0, until, 0), TK_RUN_TIMED_OUT);
    CHECK_GE(sys_now(TK_CLOCK_MONOTONIC), until);

    /* ... and with a far timer scheduled on each clock. */
    tk_timer_id far[TK_CLOCK_COUNT];
    shot_group group = {0, 0, 0};
    shot s = {.group = &group, .clock = TK_CLOCK_MONOTONIC};
    for (int c = 0; c < TK_CLOCK_COUNT; c++)
        far[c] = sched(loop, mkspec((tk_clock)c, 60 * SEC, 0, 0, TK_MODES(0), 0), shot_fn, &s);
    until = sys_now(TK_CLOCK_MONOTONIC) + 30 * MS;
    CHECK_EQ(tk_loop_run(loop, 0, until, 0), TK_RUN_TIMED_OUT);
    CHECK_GE(sys_now(TK_CLOCK_MONOTONIC), until);
    CHECK_EQ(s.count, 0);

    /* NOWAIT returns at once, with nothing due. */
    int64_t t0 = sys_now(TK_CLOCK_MONOTONIC);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_LT(sys_now(TK_CLOCK_MONOTONIC) - t0, 5 * SEC);
    CHECK_EQ(s.count, 0);

    /* NOWAIT fires what is due. */
    shot due = {.group = &group, .clock = TK_CLOCK_MONOTONIC};
    due.deadline = sched_rel(loop, TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0), shot_fn, &due,
                             &due.id);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(due.count, 1);
    CHECK_GE(due.fired_at, due.deadline);

    /* A deadline in the past is due at once. */
    shot past = {.group = &group, .clock = TK_CLOCK_REALTIME};
    past.deadline = sys_now(TK_CLOCK_REALTIME) - 5 * SEC;
    past.id = sched(loop, mkspec(TK_CLOCK_REALTIME, past.deadline, 0, 0, TK_MODES(0),
                                 TK_TIMER_ABSOLUTE),
                    shot_fn, &past);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(past.count, 1);

    /* ONCE waits for the timer, fires it and returns. */
    shot soon = {.group = &group, .clock = TK_CLOCK_MONOTONIC};
    soon.deadline = sched_rel(loop, TK_CLOCK_MONOTONIC, 10 * MS, 0, 0, TK_MODES(0), shot_fn,
                              &soon, &soon.id);
    CHECK_EQ(tk_loop_run(loop, 0, sys_now(TK_CLOCK_MONOTONIC) + PATIENCE, TK_RUN_ONCE),
             TK_RUN_PASSED);
    CHECK_EQ(soon.count, 1);
    CHECK_GE(soon.fired_at, soon.deadline);

    /* A stop before the run makes the next run return at once... */
    CHECK_EQ(tk_loop_stop(loop), 0);
    t0 = sys_now(TK_CLOCK_MONOTONIC);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_LT(sys_now(TK_CLOCK_MONOTONIC) - t0, 5 * SEC);
    /* ... only the next one. */
    until = sys_now(TK_CLOCK_MONOTONIC) + 20 * MS;
    CHECK_EQ(tk_loop_run(loop, 0, until, 0), TK_RUN_TIMED_OUT);
    CHECK_GE(sys_now(TK_CLOCK_MONOTONIC), until);

    CHECK_EQ(s.count, 0);
    for (int c = 0; c < TK_CLOCK_COUNT; c++) CHECK_EQ(tk_loop_cancel(loop, far[c]), 0);
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * Modes
 * ------------------------------------------------------------------------ */

static void test_modes(void) {
    tk_loop *loop = new_loop();
    shot_group ga = {0, 1, 0}, gb = {0, 1, 0};
    shot a = {.group = &ga, .clock = TK_CLOCK_MONOTONIC};
    shot b = {.group = &gb, .clock = TK_CLOCK_MONOTONIC};
    a.deadline = sched_rel(loop, TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), shot_fn, &a, &a.id);
    b.deadline = sched_rel(loop, TK_CLOCK_MONOTONIC, 25 * MS, 0, 0, TK_MODES(1), shot_fn, &b, &b.id);
    /* Mode 1: b fires; a came due first but waits for its mode. */
    CHECK_EQ(run_for(loop, 1, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(b.count, 1);
    CHECK_GE(b.fired_at, b.deadline);
    CHECK_EQ(a.count, 0);
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, a.id, &info), 0);
    CHECK_EQ(info.waiting_for_mode, 1);
    CHECK_EQ(info.deadline_ns, a.deadline);
    /* Still nothing for a in mode 1. */
    CHECK_EQ(run_for(loop, 1, 20 * MS), TK_RUN_TIMED_OUT);
    CHECK_EQ(a.count, 0);
    /* Mode 0 again: a fires, once. */
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(a.count, 1);
    CHECK_GE(a.fired_at, a.deadline);
    CHECK_EQ(tk_loop_timer_info(loop, a.id, &info), -ENOENT);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(a.count, 1);

    /* A repeating timer that missed many periods outside its mode fires
     * once when its mode runs, reporting what it missed. */
    rep r;
    memset(&r, 0, sizeof r);
    r.clock = TK_CLOCK_MONOTONIC;
    r.interval = 5 * MS;
    r.cancel_at = -1;
    r.d0 = sched_rel(loop, r.clock, 2 * MS, r.interval, 0, TK_MODES(2), rep_fn, &r, &r.id);
    CHECK_EQ(run_for(loop, 1, 60 * MS), TK_RUN_TIMED_OUT);
    CHECK_EQ(r.fires, 0);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(2), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(r.fires, 1);
    CHECK_GE(r.total_missed, 1);
    CHECK_EQ(r.early, 0);
    CHECK_EQ(r.info_bad, 0);
    CHECK_EQ(tk_loop_cancel(loop, r.id), 0);

    /* A timer in both modes fires in either; the last mode is a mode too. */
    unsigned run_modes[3] = {1, 0, TK_MODE_COUNT - 1};
    tk_mode_set sets[3] = {TK_MODES(0) | TK_MODES(1), TK_MODES(0) | TK_MODES(1),
                           TK_MODES(TK_MODE_COUNT - 1) | TK_MODES(5)};
    for (int i = 0; i < 3; i++) {
        shot_group g = {0, 1, 0};
        shot x = {.group = &g, .clock = TK_CLOCK_BOOTTIME};
        x.deadline = sched_rel(loop, TK_CLOCK_BOOTTIME, 5 * MS, 0, 0, sets[i], shot_fn, &x, &x.id);
        CHECK_EQ(run_for(loop, run_modes[i], PATIENCE), TK_RUN_STOPPED);
        CHECK_EQ(x.count, 1);
        CHECK_GE(x.fired_at, x.deadline);
    }
    CHECK_EQ(stats_of(loop).pending, 0);
    free_loop(loop);
}

/* A callback in mode 0 runs the loop in mode 1 (a nested run). */
typedef struct nest {
    int log[8];
    int nlog;
    int nested_rc;
    int t3_waiting;
    tk_timer_id t2, t3;
} nest;

static void nest_log(nest *n, int v) {
    if (n->nlog < 8) n->log[n->nlog] = v;
    n->nlog++;
}

static void nest_t2(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)id, (void)missed;
    nest_log(ctx, 2);
    tk_loop_stop(loop); /* ends the nested run only */
}

static void nest_t3(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id, (void)missed;
    nest_log(ctx, 3);
}

static void nest_t4(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)id, (void)missed;
    nest_log(ctx, 4);
    tk_loop_stop(loop);
}

static void nest_t1(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)id, (void)missed;
    nest *n = ctx;
    nest_log(n, 1);
    tk_timer_spec s3 = mkspec(TK_CLOCK_MONOTONIC, 1 * MS, 0, 0, TK_MODES(0), 0);
    tk_timer_spec s2 = mkspec(TK_CLOCK_MONOTONIC, 15 * MS, 0, 0, TK_MODES(1), 0);
    tk_timer_spec s4 = mkspec(TK_CLOCK_MONOTONIC, 40 * MS, 0, 0, TK_MODES(0), 0);
    tk_timer_id t4;
    if (tk_loop_schedule(loop, &s3, nest_t3, n, &n->t3) != 0) nest_log(n, -1);
    if (tk_loop_schedule(loop, &s2, nest_t2, n, &n->t2) != 0) nest_log(n, -1);
    if (tk_loop_schedule(loop, &s4, nest_t4, n, &t4) != 0) nest_log(n, -1);
    n->nested_rc = tk_loop_run(loop, TK_MODES(1), sys_now(TK_CLOCK_MONOTONIC) + PATIENCE, 0);
    nest_log(n, 9);
    tk_timer_info info;
    if (tk_loop_timer_info(loop, n->t3, &info) == 0) n->t3_waiting = info.waiting_for_mode;
    else n->t3_waiting = -1;
}

static void test_nested_run(void) {
    tk_loop *loop = new_loop();
    nest n;
    memset(&n, 0, sizeof n);
    n.nested_rc = -1000;
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0), nest_t1, &n);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(n.nested_rc, TK_RUN_STOPPED);
    /* t1 runs mode 1 nested: t2 fires there and ends it; t3 (mode 0) came
     * due meanwhile and waits; back in mode 0 it fires before t4, which
     * ends the outer run. */
    CHECK_EQ(n.nlog, 5);
    int want[5] = {1, 2, 9, 3, 4};
    for (int i = 0; i < 5 && i < n.nlog; i++) CHECK_EQ(n.log[i], want[i]);
    CHECK_EQ(n.t3_waiting, 1);
    CHECK_EQ(stats_of(loop).pending, 0);
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * File descriptors
 * ------------------------------------------------------------------------ */

typedef struct io_probe {
    int fd;
    int calls;
    uint32_t events;
    int wrong_fd;
    int drain;    /* read what is there */
    int stop;     /* stop the loop */
} io_probe;

static void io_fn(tk_loop *loop, int fd, uint32_t events, void *ctx) {
    io_probe *p = ctx;
    p->calls++;
    p->events |= events;
    if (fd != p->fd) p->wrong_fd++;
    if (p->drain) {
        char buf[64];
        while (read(fd, buf, sizeof buf) > 0) {
        }
    }
    if (p->stop) tk_loop_stop(loop);
}

static void write_byte_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id, (void)missed;
    int fd = *(int *)ctx;
    ssize_t n = write(fd, "x", 1);
    CHECK_EQ(n, 1);
}

static void test_fd(void) {
    tk_loop *loop = new_loop();
    int p[2];
    CHECK_EQ(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);

    /* A byte written by a timer while the loop waits wakes the watch. */
    io_probe rd = {.fd = p[0], .drain = 1, .stop = 1};
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_fn, &rd), 0);
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0), write_byte_fn, &p[1]);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(rd.calls, 1);
    CHECK(rd.events & TK_IO_READABLE);
    CHECK_EQ(rd.wrong_fd, 0);

    /* Watches work in every mode. */
    rd.calls = 0;
    CHECK_EQ(write(p[1], "y", 1), 1);
    CHECK_EQ(run_for(loop, 7, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(rd.calls, 1);

    /* Level-triggered: an undrained fd is reported on every pass. */
    io_probe lazy = {.fd = p[0]};
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_fn, &lazy), 0); /* replaces */
    CHECK_EQ(write(p[1], "z", 1), 1);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(lazy.calls, 2);
    CHECK(lazy.events & TK_IO_READABLE);
    CHECK_EQ(rd.calls, 1); /* the replaced watch is not called */
    char buf[8];
    CHECK_EQ(read(p[0], buf, sizeof buf), 1);

    /* After unwatching, data does not call anything. */
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), 0);
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), -ENOENT);
    CHECK_EQ(write(p[1], "w", 1), 1);
    CHECK_EQ(run_for(loop, 0, 30 * MS), TK_RUN_TIMED_OUT);
    CHECK_EQ(lazy.calls, 2);
    CHECK_EQ(rd.calls, 1);
    CHECK_EQ(read(p[0], buf, sizeof buf), 1);

    /* Writable end. */
    io_probe wr = {.fd = p[1], .stop = 1};
    CHECK_EQ(tk_loop_watch_fd(loop, p[1], TK_IO_WRITABLE, io_fn, &wr), 0);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_GE(wr.calls, 1);
    CHECK(wr.events & TK_IO_WRITABLE);
    CHECK_EQ(wr.wrong_fd, 0);
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[1]), 0);

    /* The peer hangs up. */
    io_probe hup = {.fd = p[0], .drain = 1, .stop = 1};
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_fn, &hup), 0);
    close(p[1]);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_GE(hup.calls, 1);
    CHECK(hup.events & TK_IO_HANGUP);
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), 0);
    close(p[0]);

    /* Invalid descriptors. */
    io_probe none = {.fd = -1};
    CHECK_LT(tk_loop_watch_fd(loop, -1, TK_IO_READABLE, io_fn, &none), 0);
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_fn, &none), -EBADF); /* closed */
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), -ENOENT);
    CHECK_EQ(none.calls, 0);
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------ */

typedef struct runner {
    tk_loop *loop;
    unsigned mode;
    int64_t until;
    uint32_t flags;
    int rc;
    atomic_int done;
    atomic_int tid; /* the thread's id, once it runs */
    pthread_t thread;
} runner;

static void *runner_main(void *arg) {
    runner *r = arg;
    atomic_store(&r->tid, (int)syscall(SYS_gettid));
    r->rc = tk_loop_run(r->loop, r->mode, r->until, r->flags);
    atomic_store(&r->done, 1);
    return NULL;
}

static void runner_start(runner *r, tk_loop *loop, unsigned mode, int64_t until,
                         uint32_t flags) {
    r->loop = loop;
    r->mode = mode;
    r->until = until;
    r->flags = flags;
    r->rc = -1000;
    atomic_store(&r->done, 0);
    atomic_store(&r->tid, 0);
    if (pthread_create(&r->thread, NULL, runner_main, r) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        exit(1);
    }
}

static void set_flag_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id, (void)missed;
    atomic_store((atomic_int *)ctx, 1);
}

/* Polls `flag` until set or `ns` passed; returns the flag. */
static int wait_flag(atomic_int *flag, int64_t ns) {
    int64_t end = sys_now(TK_CLOCK_MONOTONIC) + ns;
    while (!atomic_load(flag) && sys_now(TK_CLOCK_MONOTONIC) < end) sleep_ns(MS);
    return atomic_load(flag);
}

/* Whether thread `tid` of this process is blocked in epoll_wait: the first
 * field of /proc/self/task/TID/syscall is the number of the system call a
 * blocked thread is in ("running" otherwise). -1 if the file cannot be read. */
static int blocked_in_epoll(int tid) {
    char path[64], text[64] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    if (n == 0) return -1;
    long nr = strtol(text, NULL, 10);
#ifdef SYS_epoll_wait
    if (nr == SYS_epoll_wait) return 1;
#endif
    return nr == SYS_epoll_pwait;
}

/* Waits until the runner's thread sleeps in epoll_wait: it has finished its
 * pass and armed its timerfds, so what is scheduled next must wake it. */
static void wait_asleep(runner *r) {
    int64_t end = sys_now(TK_CLOCK_MONOTONIC) + PATIENCE;
    int tid, asleep = 0;
    while ((tid = atomic_load(&r->tid)) == 0 && sys_now(TK_CLOCK_MONOTONIC) < end) sleep_ns(MS);
    while (tid != 0 && (asleep = blocked_in_epoll(tid)) == 0 && sys_now(TK_CLOCK_MONOTONIC) < end)
        sleep_ns(MS);
    if (asleep < 0)
        fprintf(stderr, "wait_asleep: /proc/self/task/%d/syscall cannot be read, so this test "
                        "cannot tell when the loop sleeps\n", tid);
    CHECK_EQ(asleep, 1);
}

/* Schedules a one-shot `delay` from now on the running `loop` and waits for
 * it to fire: returns 1 once the loop has made its passes up to then, in
 * which every timer due earlier fired first (passes go in deadline order),
 * and 0 if it did not fire in time (the run ended, say). */
static int pass_after(tk_loop *loop, int64_t delay) {
    static atomic_int fired;
    atomic_store(&fired, 0);
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, delay, 0, 0, TK_MODES(0), 0), set_flag_fn, &fired);
    return wait_flag(&fired, PATIENCE);
}

/* Starts a thread running `loop` FOREVER and waits until a callback shows it
 * is inside tk_loop_run. */
static void start_running(runner *r, tk_loop *loop) {
    static atomic_int running;
    atomic_store(&running, 0);
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0), 0), set_flag_fn, &running);
    runner_start(r, loop, 0, TK_FOREVER, 0);
    CHECK(wait_flag(&running, PATIENCE));
}

static void test_thread_busy_and_stop(void) {
    tk_loop *loop = new_loop();
    runner r;
    start_running(&r, loop);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), -EBUSY);
    CHECK_EQ(tk_loop_run(loop, TK_MODES(1), sys_now(TK_CLOCK_MONOTONIC) + 10 * MS, 0), -EBUSY);
    CHECK_EQ(tk_loop_destroy(loop), -EBUSY);
    int done = atomic_load(&r.done);
    CHECK_EQ(done, 0);
    /* Stop from this thread ends the run on the other one. */
    sleep_ns(10 * MS);
    CHECK_EQ(tk_loop_stop(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_STOPPED);
    /* The loop is free again. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);

    /* A stop from another thread while the loop sleeps on a far timer. */
    shot_group group = {0, 0, 0};
    shot far = {.group = &group, .clock = TK_CLOCK_MONOTONIC};
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 60 * SEC, 0, 0, TK_MODES(0), 0), shot_fn, &far);
    start_running(&r, loop);
    wait_asleep(&r);
    CHECK_EQ(tk_loop_stop(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_STOPPED);
    CHECK_EQ(far.count, 0);
    free_loop(loop);
}

static void test_thread_wakeup(void) {
    tk_loop *loop = new_loop();
    shot_group group = {0, 0, 0};
    shot far = {.group = &group, .clock = TK_CLOCK_MONOTONIC};
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 60 * SEC, 0, 0, TK_MODES(0), 0), shot_fn, &far);

    /* A ONCE run sleeping on a far timer returns after a wakeup. */
    runner r;
    runner_start(&r, loop, 0, TK_FOREVER, TK_RUN_ONCE);
    wait_asleep(&r);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_PASSED);
    CHECK_EQ(far.count, 0);

    /* A wakeup does not end a plain run. */
    start_running(&r, loop);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK_EQ(tk_loop_wakeup(loop), 0);
    CHECK(pass_after(loop, 0)); /* the run goes on after handling them */
    int done = atomic_load(&r.done);
    CHECK_EQ(done, 0);
    CHECK_EQ(tk_loop_stop(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_STOPPED);
    CHECK_EQ(far.count, 0);
    free_loop(loop);
}

/* A timer scheduled from another thread, earlier than the one the loop sleeps
 * for, wakes the loop. */
static void test_thread_earlier_timer(void) {
    /* far clock (-1: no far timer), near clock */
    int cases[5][2] = {{-1, TK_CLOCK_MONOTONIC},
                       {TK_CLOCK_MONOTONIC, TK_CLOCK_MONOTONIC},
                       {TK_CLOCK_MONOTONIC, TK_CLOCK_REALTIME},
                       {TK_CLOCK_REALTIME, TK_CLOCK_BOOTTIME},
                       {TK_CLOCK_BOOTTIME, TK_CLOCK_BOOTTIME}};
    for (int i = 0; i < 5; i++) {
        tk_loop *loop = new_loop();
        shot_group fg = {0, 1, 0}, ng = {0, 1, 0};
        shot far = {.group = &fg, .clock = TK_CLOCK_MONOTONIC};
        shot near = {.group = &ng};
        int64_t far_deadline_mono = INT64_MAX;
        if (cases[i][0] >= 0) {
            far.clock = (tk_clock)cases[i][0];
            far.deadline = sched_rel(loop, far.clock, 60 * SEC, 0, 0, TK_MODES(0), shot_fn, &far,
                                     &far.id);
            far_deadline_mono = sys_now(TK_CLOCK_MONOTONIC) + 60 * SEC;
        }
        runner r;
        /* The run gives up long before the far timer, long after the near one. */
        runner_start(&r, loop, 0, sys_now(TK_CLOCK_MONOTONIC) + 15 * SEC, 0);
        wait_asleep(&r);
        /* The loop may fire it before this thread looks again: its deadline
         * is known only to be no earlier than the clock read before, and its
         * handle is not stored where the callback reads it. */
        near.clock = (tk_clock)cases[i][1];
        near.deadline = sys_now(near.clock) + 10 * MS;
        sched(loop, mkspec(near.clock, 10 * MS, 0, 0, TK_MODES(0), 0), shot_fn, &near);
        pthread_join(r.thread, NULL);
        CHECK_EQ(r.rc, TK_RUN_STOPPED); /* stopped by the near timer */
        CHECK_EQ(near.count, 1);
        CHECK_GE(near.fired_at, near.deadline);
        CHECK_EQ(far.count, 0);
        CHECK_LT(sys_now(TK_CLOCK_MONOTONIC), far_deadline_mono);
        /* Woken for it, not by the run's time limit 15 s away: a bound only a
         * loop that slept through the new timer can miss. */
        CHECK_LT(near.fired_at - near.deadline, 10 * SEC);
        free_loop(loop);
    }
}

/* Another thread acts on a timer while its callback runs on the loop thread.
 * A one-shot is no longer scheduled then (it has fired): cancel, reschedule
 * and info from that other thread find nothing. A repeating timer still is:
 * cancelling it stops further fires. */
typedef struct held {
    atomic_int inside;  /* the callback is running */
    atomic_int release; /* let it return */
    atomic_int calls;
} held;

static void held_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id, (void)missed;
    held *h = ctx;
    atomic_fetch_add(&h->calls, 1);
    atomic_store(&h->inside, 1);
    wait_flag(&h->release, PATIENCE);
    atomic_store(&h->inside, 0);
}

static void test_thread_cancel_while_firing(void) {
    tk_loop *loop = new_loop();
    runner r;
    start_running(&r, loop);

    /* One-shot: cancel from outside */
    held one = {0};
    tk_timer_id id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0), 0), held_fn, &one);
    CHECK(wait_flag(&one.inside, PATIENCE));
    tk_timer_info info;
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), -ENOENT);
    CHECK_EQ(tk_loop_fire(loop, id), -ENOENT);
    CHECK_EQ(tk_loop_cancel(loop, id), -ENOENT);
    atomic_store(&one.release, 1);
    CHECK(pass_after(loop, 20 * MS));
    int one_calls = atomic_load(&one.calls);
    CHECK_EQ(one_calls, 1);
    CHECK_EQ(tk_loop_cancel(loop, id), -ENOENT);

    /* One-shot: reschedule from outside does not revive it */
    held two = {0};
    id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 0, 0, 0, TK_MODES(0), 0), held_fn, &two);
    CHECK(wait_flag(&two.inside, PATIENCE));
    tk_timer_spec again = mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0);
    CHECK_EQ(tk_loop_reschedule(loop, id, &again), -ENOENT);
    atomic_store(&two.release, 1);
    CHECK(pass_after(loop, 20 * MS)); /* past where a revived one would have fired */
    int two_calls = atomic_load(&two.calls);
    CHECK_EQ(two_calls, 1);
    CHECK_EQ(tk_loop_cancel(loop, id), -ENOENT);

    /* Repeating */
    held rep = {0};
    id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, 0, 5 * MS, 0, TK_MODES(0), 0), held_fn, &rep);
    CHECK(wait_flag(&rep.inside, PATIENCE));
    CHECK_EQ(tk_loop_timer_info(loop, id, &info), 0);
    CHECK_EQ(tk_loop_cancel(loop, id), 0);
    CHECK_EQ(tk_loop_cancel(loop, id), -ENOENT);
    atomic_store(&rep.release, 1);
    CHECK(pass_after(loop, 20 * MS)); /* four of its periods */
    int rep_calls = atomic_load(&rep.calls);
    CHECK_EQ(rep_calls, 1);

    CHECK_EQ(tk_loop_stop(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_STOPPED);
    CHECK_EQ(stats_of(loop).pending, 0);
    free_loop(loop);
}

/* Four threads schedule and cancel their own one-shot timers while the loop
 * runs on a fifth. */
enum { STRESS_THREADS = 4, STRESS_TIMERS = 400 };

typedef struct stimer {
    tk_clock clock;
    int64_t not_before;
    tk_timer_id id;
    int scheduled;
    int cancel_tried;
    int cancel_rc;
    atomic_int fired;
    atomic_int early;
} stimer;

typedef struct sworker {
    tk_loop *loop;
    uint64_t rng;
    stimer timers[STRESS_TIMERS];
    int errors;
    pthread_t thread;
} sworker;

static void stress_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id;
    stimer *t = ctx;
    if (sys_now(t->clock) < t->not_before || missed != 0) atomic_fetch_add(&t->early, 1);
    atomic_fetch_add(&t->fired, 1);
}

static void stress_cancel(sworker *w, stimer *t) {
    t->cancel_tried = 1;
    t->cancel_rc = tk_loop_cancel(w->loop, t->id);
    if (t->cancel_rc != 0 && t->cancel_rc != -ENOENT) w->errors++;
    /* A second cancel never succeeds. */
    if (tk_loop_cancel(w->loop, t->id) != -ENOENT) w->errors++;
}

static void *stress_main(void *arg) {
    sworker *w = arg;
    for (int i = 0; i < STRESS_TIMERS; i++) {
        stimer *t = &w->timers[i];
        t->clock = (tk_clock)rng_below(&w->rng, TK_CLOCK_COUNT);
        int64_t delay = (int64_t)rng_below(&w->rng, 8 * MS);
        if (rng_below(&w->rng, 8) == 0) delay = 0;
        int64_t leeway = (int64_t)rng_below(&w->rng, 300 * US);
        tk_timer_spec s = mkspec(t->clock, delay, 0, leeway, TK_MODES(0), 0);
        t->not_before = sys_now(t->clock) + delay;
        if (tk_loop_schedule(w->loop, &s, stress_fn, t, &t->id) != 0) {
            w->errors++;
            continue;
        }
        t->scheduled = 1;
        uint64_t what = rng_below(&w->rng, 10);
        if (what < 4 && i > 0) {
            /* cancel an earlier one not cancelled yet */
            int j = (int)rng_below(&w->rng, (uint64_t)i + 1);
            stimer *u = &w->timers[j];
            if (u->scheduled && !u->cancel_tried) stress_cancel(w, u);
        } else if (what == 4) {
            stress_cancel(w, t); /* right away, racing with a due timer */
        }
        if (rng_below(&w->rng, 4) == 0) sleep_ns((int64_t)rng_below(&w->rng, 300 * US));
    }
    for (int i = 0; i < STRESS_TIMERS; i++) {
        stimer *t = &w->timers[i];
        if (t->scheduled && !t->cancel_tried && rng_below(&w->rng, 3) == 0) stress_cancel(w, t);
    }
    return NULL;
}

static void test_stress(void) {
    tk_loop *loop = new_loop();
    static sworker workers[STRESS_THREADS];
    memset(workers, 0, sizeof workers);
    tk_loop_stats st0 = stats_of(loop);
    runner r;
    start_running(&r, loop);
    for (int k = 0; k < STRESS_THREADS; k++) {
        workers[k].loop = loop;
        workers[k].rng = rng_next(&g_rng);
        if (pthread_create(&workers[k].thread, NULL, stress_main, &workers[k]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    }
    for (int k = 0; k < STRESS_THREADS; k++) pthread_join(workers[k].thread, NULL);

    /* Every timer not cancelled must fire; wait for that many callbacks. */
    int expected = 0, cancelled = 0;
    for (int k = 0; k < STRESS_THREADS; k++) {
        CHECK_EQ(workers[k].errors, 0);
        for (int i = 0; i < STRESS_TIMERS; i++) {
            stimer *t = &workers[k].timers[i];
            if (!t->scheduled) continue;
            if (t->cancel_tried && t->cancel_rc == 0) cancelled++;
            else expected++;
        }
    }
    int64_t end = sys_now(TK_CLOCK_MONOTONIC) + 60 * SEC;
    int total = 0;
    for (;;) {
        total = 0;
        for (int k = 0; k < STRESS_THREADS; k++)
            for (int i = 0; i < STRESS_TIMERS; i++) total += atomic_load(&workers[k].timers[i].fired);
        if (total >= expected || sys_now(TK_CLOCK_MONOTONIC) > end) break;
        sleep_ns(MS);
    }
    CHECK_EQ(tk_loop_stop(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_STOPPED);

    int bad = 0;
    total = 0;
    for (int k = 0; k < STRESS_THREADS; k++) {
        for (int i = 0; i < STRESS_TIMERS; i++) {
            stimer *t = &workers[k].timers[i];
            if (!t->scheduled) continue;
            int fired = atomic_load(&t->fired);
            total += fired;
            int want = (t->cancel_tried && t->cancel_rc == 0) ? 0 : 1;
            if (fired != want || atomic_load(&t->early) != 0) {
                if (bad++ < 10)
                    fprintf(stderr,
                            "  stress: thread %d timer %d clock %s fired %d want %d early %d "
                            "cancel_tried %d cancel_rc %d\n",
                            k, i, clock_names[t->clock], fired, want, atomic_load(&t->early),
                            t->cancel_tried, t->cancel_rc);
            }
        }
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(total, expected);
    CHECK_GE(cancelled, 1);
    tk_loop_stats st1 = stats_of(loop);
    CHECK_EQ(st1.pending, 0);
    CHECK_EQ(st1.fired - st0.fired, (uint64_t)expected + 1); /* + the start marker */
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * Clock change handler
 * ------------------------------------------------------------------------ */

typedef struct change_probe {
    int calls;
    int spurious;
    int64_t offset; /* REALTIME - MONOTONIC when registered */
} change_probe;

static int64_t wall_offset(void) {
    return sys_now(TK_CLOCK_REALTIME) - sys_now(TK_CLOCK_MONOTONIC);
}

static void change_fn(tk_loop *loop, void *ctx) {
    (void)loop;
    change_probe *p = ctx;
    p->calls++;
    /* This test never sets the clock; a call is only right if something else
     * really stepped it. */
    int64_t d = wall_offset() - p->offset;
    if (d > -MS && d < MS) p->spurious++;
}

static void test_clock_change_handler(void) {
    tk_loop *loop = new_loop();
    change_probe probe = {0, 0, wall_offset()};
    tk_loop_stats st0 = stats_of(loop);
    CHECK_EQ(tk_loop_set_clock_change_handler(loop, change_fn, &probe), 0);

    /* An idle loop with the handler set waits quietly. */
    int64_t until = sys_now(TK_CLOCK_MONOTONIC) + 100 * MS;
    CHECK_EQ(tk_loop_run(loop, 0, until, 0), TK_RUN_TIMED_OUT);
    CHECK_GE(sys_now(TK_CLOCK_MONOTONIC), until);
    tk_loop_stats st1 = stats_of(loop);
    CHECK_LT(st1.wakeups - st0.wakeups, 200); /* not spinning */

    /* Timers on every clock still fire, never early, in order. */
    enum { N = 6 };
    shot_group group = {0, N, 0};
    shot shots[N];
    for (int i = 0; i < N; i++) {
        shots[i] = (shot){.group = &group, .clock = (tk_clock)(i % TK_CLOCK_COUNT), .index = i,
                          .key = i};
        shots[i].deadline = sched_rel(loop, shots[i].clock, 5 * MS + i * 20 * MS, 0, 0,
                                      TK_MODES(0), shot_fn, &shots[i], &shots[i].id);
    }
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    check_shots(shots, N);

    /* Cleared: still fine. */
    CHECK_EQ(tk_loop_set_clock_change_handler(loop, NULL, NULL), 0);
    shot_group g2 = {0, 1, 0};
    shot last = {.group = &g2, .clock = TK_CLOCK_REALTIME};
    last.deadline = sched_rel(loop, TK_CLOCK_REALTIME, 5 * MS, 0, 0, TK_MODES(0), shot_fn, &last,
                              &last.id);
    CHECK_EQ(run_for(loop, 0, PATIENCE), TK_RUN_STOPPED);
    CHECK_EQ(last.count, 1);
    CHECK_GE(last.fired_at, last.deadline);

    CHECK_EQ(probe.spurious, 0);
    tk_loop_stats st2 = stats_of(loop);
    CHECK_EQ(st2.clock_changes - st0.clock_changes, (uint64_t)probe.calls);
    if (probe.calls) fprintf(stderr, "note: the wall clock was stepped during the test\n");
    free_loop(loop);
}

/* ------------------------------------------------------------------------
 * Main
 * ------------------------------------------------------------------------ */

/* A one-shot whose callback takes 100 ms and a repeating 10 ms timer come
 * due in the same pass, the one-shot first. The repeating timer's fire is
 * judged when it is called: at least 100 ms late, so it reports at least
 * 9 skipped periods at once, and its next fire is a period ahead of that,
 * not due at once. */
typedef struct slow_pass {
    int64_t first_due;
    int fires;
    uint64_t missed[2];
    int64_t at[2];
} slow_pass;

static void sleep_100ms(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    (void)loop;
    (void)timer;
    (void)missed;
    (void)context;
    sleep_ns(100 * MS);
}

static void record_two(tk_loop *loop, tk_timer_id timer, uint64_t missed, void *context) {
    slow_pass *p = context;
    if (p->fires < 2) {
        p->missed[p->fires] = missed;
        p->at[p->fires] = sys_now(TK_CLOCK_MONOTONIC);
    }
    if (++p->fires == 2) {
        tk_loop_cancel(loop, timer);
        tk_loop_stop(loop);
    }
}

static void test_missed_judged_when_fired(void) {
    tk_loop *loop = new_loop();
    slow_pass p = {0};
    int64_t now = sys_now(TK_CLOCK_MONOTONIC);
    tk_timer_spec slow = {.clock = TK_CLOCK_MONOTONIC, .deadline_ns = now + 10 * MS,
                          .modes = TK_MODES(0), .flags = TK_TIMER_ABSOLUTE};
    tk_timer_spec every = {.clock = TK_CLOCK_MONOTONIC, .deadline_ns = now + 10 * MS + 500000,
                           .interval_ns = 10 * MS, .modes = TK_MODES(0), .flags = TK_TIMER_ABSOLUTE};
    tk_timer_id a, b;
    CHECK_EQ(tk_loop_schedule(loop, &slow, sleep_100ms, NULL, &a), 0);
    CHECK_EQ(tk_loop_schedule(loop, &every, record_two, &p, &b), 0);
    sleep_ns(20 * MS); /* both are due when the loop's first pass begins */
    CHECK_EQ(run_for(loop, 0, 30000 * MS), TK_RUN_STOPPED);
    CHECK_EQ(p.fires, 2);
    /* Called at least 100 ms after it was due 10.5 ms in: >= 9 periods. */
    CHECK_GE(p.missed[0], 9);
    /* Its next fire was placed a period after the late one, not in the past. */
    CHECK_GE(p.at[1], now + 10 * MS + 500000 + (int64_t)(p.missed[0] + 1) * 10 * MS);
    free_loop(loop);
}

/* Three timers due together; the first one's callback disturbs the other
 * two: a nested TK_RUN_NOWAIT run in a mode they lack (which parks them),
 * or a timer scheduled with a deadline long past (which sorts first on the
 * clock but waits for a later pass). One TK_RUN_NOWAIT pass of the outer
 * run still fires both, in order. */
typedef struct due_behind {
    int what; /* 0: a nested run; 1: an overdue timer */
    int log[4];
    int nlog;
    int nested_rc;
    tk_timer_id overdue;
} due_behind;

static void due_behind_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context);

static void due_behind_first(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    due_behind *d = context;
    due_behind_fn(loop, id, missed, context);
    if (d->what == 0) {
        d->nested_rc = tk_loop_run(loop, TK_MODES(5), TK_FOREVER, TK_RUN_NOWAIT);
    } else {
        tk_timer_spec past = {.clock = TK_CLOCK_MONOTONIC, .deadline_ns = 1,
                              .modes = TK_MODES(0), .flags = TK_TIMER_ABSOLUTE};
        CHECK_EQ(tk_loop_schedule(loop, &past, due_behind_fn, d, &d->overdue), 0);
    }
}

static void due_behind_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *context) {
    (void)loop;
    (void)missed;
    due_behind *d = context;
    if (d->nlog < 4) d->log[d->nlog] = (int)(uint32_t)id;
    d->nlog++;
}

static void test_due_behind(void) {
    for (int what = 0; what < 2; what++) {
        tk_loop *loop = new_loop();
        due_behind d = {.what = what, .nested_rc = -1000};
        tk_timer_spec now = {.clock = TK_CLOCK_MONOTONIC, .modes = TK_MODES(0)};
        tk_timer_id ids[3];
        CHECK_EQ(tk_loop_schedule(loop, &now, due_behind_first, &d, &ids[0]), 0);
        CHECK_EQ(tk_loop_schedule(loop, &now, due_behind_fn, &d, &ids[1]), 0);
        CHECK_EQ(tk_loop_schedule(loop, &now, due_behind_fn, &d, &ids[2]), 0);
        CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
        CHECK_EQ(d.nlog, 3);
        for (int i = 0; i < 3 && i < d.nlog; i++) CHECK_EQ(d.log[i], (int)(uint32_t)ids[i]);
        if (what == 0) {
            CHECK_EQ(d.nested_rc, TK_RUN_PASSED);
            CHECK_EQ(stats_of(loop).pending, 0);
        } else {
            /* The overdue timer fires in the next pass. */
            CHECK_EQ(stats_of(loop).pending, 1);
            CHECK_EQ(tk_loop_run(loop, TK_MODES(0), TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
            CHECK_EQ(d.nlog, 4);
            if (d.nlog == 4) CHECK_EQ(d.log[3], (int)(uint32_t)d.overdue);
        }
        tk_timer_info info;
        CHECK_EQ(tk_loop_timer_info(loop, ids[1], &info), -ENOENT);
        free_loop(loop);
    }
}

/* Watches `fd` with `probe`, then closes both ends of its pipe: the watch
 * is stale, and the lowest free number is `fd`'s. */
static int stale_watch(tk_loop *loop, io_probe *probe) {
    int p[2];
    CHECK_EQ(pipe(p), 0);
    probe->fd = p[0];
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_fn, probe), 0);
    close(p[0]);
    close(p[1]);
    return p[0];
}

/* Whether descriptor `fd` of this process is a timerfd. */
static int is_timerfd(int fd) {
    char path[64], target[64] = {0};
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return readlink(path, target, sizeof target - 1) > 0 &&
           strcmp(target, "anon_inode:[timerfd]") == 0;
}

/* Runs `loop` for 200 ms on a thread; checks that the run ends at its
 * deadline and that `fired` was set meanwhile. */
static void check_run_fires(tk_loop *loop, atomic_int *fired) {
    runner r;
    runner_start(&r, loop, TK_MODES(0), sys_now(TK_CLOCK_MONOTONIC) + 200 * MS, 0);
    CHECK(wait_flag(&r.done, PATIENCE));
    if (!atomic_load(&r.done)) tk_loop_stop(loop); /* hung: end it to go on */
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_TIMED_OUT);
    CHECK(atomic_load(fired));
}

/* A watched fd closed without unwatching leaves its number free, and the
 * loop's next timerfd takes it. Watching or unwatching that number then must
 * not reach the loop's own registration: an unwatch that removed it left
 * timers unfired and a run past its deadline, for good; a watch that
 * changed it sent the timerfd's wake-ups to the watch's function. */
static void test_fd_number_taken_by_loop(void) {
    tk_loop *loop = new_loop();
    static atomic_int fired;

    /* Unwatching, as the header says to after a close. */
    io_probe first = {0};
    int number = stale_watch(loop, &first);
    atomic_store(&fired, 0);
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 20 * MS, 0, 0, TK_MODES(0), 0), set_flag_fn, &fired);
    CHECK(is_timerfd(number)); /* the setup: the loop's monotonic timerfd */
    CHECK_EQ(tk_loop_unwatch_fd(loop, number), 0); /* the stale watch goes */
    CHECK_EQ(tk_loop_unwatch_fd(loop, number), -ENOENT);
    check_run_fires(loop, &fired);

    /* Watching it again first. */
    io_probe second = {0};
    number = stale_watch(loop, &second);
    atomic_store(&fired, 0);
    sched(loop, mkspec(TK_CLOCK_BOOTTIME, 20 * MS, 0, 0, TK_MODES(0), 0), set_flag_fn, &fired);
    CHECK(is_timerfd(number)); /* the loop's boot-clock timerfd */
    CHECK_EQ(tk_loop_watch_fd(loop, number, TK_IO_READABLE, io_fn, &second), -ENOENT);
    CHECK_EQ(tk_loop_unwatch_fd(loop, number), 0);
    CHECK_EQ(tk_loop_watch_fd(loop, number, TK_IO_READABLE, io_fn, &second), -EEXIST);
    check_run_fires(loop, &fired);

    CHECK_EQ(first.calls + second.calls, 0);
    free_loop(loop);
}

/* Wake-ups of a 20 ms run, which, with nothing to do, wakes once or so. */
static uint64_t wakeups_in_20ms(tk_loop *loop) {
    uint64_t before = stats_of(loop).wakeups;
    CHECK_EQ(run_for(loop, 0, 20 * MS), TK_RUN_TIMED_OUT);
    return stats_of(loop).wakeups - before;
}

/* The watched read end of a pipe with a byte in it, closed while a dup of
 * it stays open: epoll keeps reporting it. Returns the dup. */
static int closed_but_open_elsewhere(tk_loop *loop, io_probe *probe, int *number) {
    int p[2];
    CHECK_EQ(pipe(p), 0);
    int d = dup(p[0]);
    CHECK(d >= 0);
    probe->fd = p[0];
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_fn, probe), 0);
    CHECK_EQ(write(p[1], "x", 1), 1);
    close(p[0]);
    close(p[1]);
    *number = p[0];
    return d;
}

/* Unwatching a descriptor that was closed while its file stays open
 * elsewhere ends the loop's wake-ups for it, whatever the number is now:
 * free, another descriptor's, or the loop's own. The other watches and the
 * timers carry on. */
static void test_unwatch_closed_while_open_elsewhere(void) {
    tk_loop *loop = new_loop();
    /* Another watch, which must survive each unwatch. */
    int q[2];
    CHECK_EQ(pipe2(q, O_NONBLOCK), 0);
    io_probe kept = {.fd = q[0], .drain = 1, .stop = 1};
    CHECK_EQ(tk_loop_watch_fd(loop, q[0], TK_IO_READABLE, io_fn, &kept), 0);
    for (int reuse = 0; reuse < 3; reuse++) {
        io_probe gone = {0};
        int number;
        int d = closed_but_open_elsewhere(loop, &gone, &number);
        int o[2] = {-1, -1};
        if (reuse == 1) {
            /* Another pipe takes the number. */
            CHECK_EQ(pipe2(o, O_NONBLOCK), 0);
            if (o[0] != number) {
                CHECK_EQ(dup2(o[0], number), number);
                close(o[0]);
            }
            CHECK_EQ(tk_loop_watch_fd(loop, number, TK_IO_READABLE, io_fn, &gone), -ENOENT);
        } else if (reuse == 2) {
            /* The loop's boot-clock timerfd takes it. */
            static atomic_int fired;
            sched(loop, mkspec(TK_CLOCK_BOOTTIME, 3600 * SEC, 0, 0, TK_MODES(0), 0),
                  set_flag_fn, &fired);
            CHECK(is_timerfd(number));
        }
        CHECK_EQ(tk_loop_unwatch_fd(loop, number), 0);
        CHECK_EQ(tk_loop_unwatch_fd(loop, number), -ENOENT);
        gone.calls = 0;
        CHECK_LE(wakeups_in_20ms(loop), 5);
        CHECK_LE(wakeups_in_20ms(loop), 5);
        CHECK_EQ(gone.calls, 0);
        if (reuse == 1) {
            /* The pipe now under the number can be watched, and is heard. */
            io_probe fresh = {.fd = number, .drain = 1, .stop = 1};
            CHECK_EQ(tk_loop_watch_fd(loop, number, TK_IO_READABLE, io_fn, &fresh), 0);
            CHECK_EQ(write(o[1], "y", 1), 1);
            CHECK_EQ(run_for(loop, 0, 10 * SEC), TK_RUN_STOPPED);
            CHECK_EQ(fresh.calls, 1);
            CHECK_EQ(fresh.wrong_fd, 0);
            CHECK_EQ(tk_loop_unwatch_fd(loop, number), 0);
            close(number);
            close(o[1]);
        }
        /* The other watch and the timers still work. */
        kept.calls = 0;
        CHECK_EQ(write(q[1], "z", 1), 1);
        CHECK_EQ(run_for(loop, 0, 10 * SEC), TK_RUN_STOPPED);
        CHECK_EQ(kept.calls, 1);
        static atomic_int fired;
        atomic_store(&fired, 0);
        sched(loop, mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0), set_flag_fn,
              &fired);
        check_run_fires(loop, &fired);
        close(d);
        CHECK_EQ(gone.calls, 0);
    }
    CHECK_EQ(kept.wrong_fd, 0);
    CHECK_EQ(tk_loop_unwatch_fd(loop, q[0]), 0);
    close(q[0]);
    close(q[1]);
    free_loop(loop);
}

/* An unwatch from another thread while the loop sleeps: the run wakes and
 * sleeps on without the closed descriptor's wake-ups. */
typedef struct unwatcher {
    tk_loop *loop;
    int number;
    int result;
} unwatcher;

static void *unwatch_later(void *context) {
    unwatcher *u = context;
    sleep_ns(5 * MS);
    __atomic_store_n(&u->result, tk_loop_unwatch_fd(u->loop, u->number), __ATOMIC_RELEASE);
    return NULL;
}

static void test_unwatch_closed_from_another_thread(void) {
    tk_loop *loop = new_loop();
    io_probe gone = {0};
    int number;
    int d = closed_but_open_elsewhere(loop, &gone, &number);
    /* The spin goes on until the unwatch, then the run sleeps: its last
     * 20 ms wake it a handful of times. */
    unwatcher u = {.loop = loop, .number = number, .result = 1};
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, unwatch_later, &u), 0);
    while (1) {
        CHECK_EQ(run_for(loop, 0, 5 * MS), TK_RUN_TIMED_OUT);
        int done = __atomic_load_n(&u.result, __ATOMIC_ACQUIRE) != 1;
        if (done) break;
    }
    CHECK_EQ(pthread_join(thread, NULL), 0);
    CHECK_EQ(u.result, 0);
    gone.calls = 0;
    CHECK_LE(wakeups_in_20ms(loop), 5);
    CHECK_EQ(gone.calls, 0);
    close(d);
    free_loop(loop);
}

/* Takes every descriptor left (the limit lowered to a few above `above`);
 * returns how many, and undoes it with give_back_descriptors. */
static int take_descriptors(int above, int fillers[128], struct rlimit *saved) {
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, saved), 0);
    struct rlimit low = *saved;
    low.rlim_cur = (rlim_t)above + 64 < saved->rlim_cur ? (rlim_t)above + 64 : saved->rlim_cur;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    int filled = 0;
    while (filled < 128 && (fillers[filled] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
        filled++;
    }
    CHECK(filled < 128); /* every descriptor is taken */
    return filled;
}

static void give_back_descriptors(const int fillers[128], int filled, const struct rlimit *saved) {
    for (int i = 0; i < filled; i++) close(fillers[i]);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, saved), 0);
}

/* The unwatch of a closed descriptor needs no descriptor of its own: it
 * succeeds with none left. With none left to rebuild the epoll instance
 * with, a registration that outlives the close goes on waking the loop,
 * which still runs its timers, until a descriptor is free; then the loop
 * sleeps again. */
static void test_unwatch_closed_without_descriptors(void) {
    tk_loop *loop = new_loop();
    /* Its timerfd is opened now: no descriptor is left later. */
    static atomic_int fired;
    atomic_store(&fired, 0);
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0), set_flag_fn, &fired);
    check_run_fires(loop, &fired);

    /* Closed everywhere: epoll dropped it, and nothing is left to do. */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    io_probe closed = {.fd = p[0]};
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, io_fn, &closed), 0);
    close(p[0]);
    close(p[1]);
    int fillers[128];
    struct rlimit saved;
    int filled = take_descriptors(p[1], fillers, &saved);
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), 0);
    CHECK_LE(wakeups_in_20ms(loop), 5);
    give_back_descriptors(fillers, filled, &saved);

    /* Open elsewhere: the loop keeps waking until it can rebuild. */
    io_probe gone = {0};
    int number;
    int d = closed_but_open_elsewhere(loop, &gone, &number);
    filled = take_descriptors(d, fillers, &saved);
    CHECK_EQ(tk_loop_unwatch_fd(loop, number), 0);
    atomic_store(&fired, 0);
    sched(loop, mkspec(TK_CLOCK_MONOTONIC, 5 * MS, 0, 0, TK_MODES(0), 0), set_flag_fn, &fired);
    check_run_fires(loop, &fired);
    /* Its waits still end at once: a 20 ms run wakes many times (given a
     * few tries, for a machine busy enough to hold the thread back). */
    int spun = 0;
    for (int i = 0; i < 50 && !spun; i++) spun = wakeups_in_20ms(loop) > 5;
    CHECK(spun);
    give_back_descriptors(fillers, filled, &saved);
    gone.calls = 0;
    CHECK_LE(wakeups_in_20ms(loop), 5);
    CHECK_LE(wakeups_in_20ms(loop), 5);
    CHECK_EQ(gone.calls, 0);
    close(d);
    free_loop(loop);
}

/* A timer whose deadline saturated to INT64_MIN, the value that marks a
 * timerfd disarmed, scheduled while the loop sleeps on another thread: it
 * is due, so it wakes the loop and fires (it was taken for the target
 * already armed, and waited for the next wake-up of any other cause). */
static void test_deadline_at_int64_min(void) {
    for (int clock = 0; clock < TK_CLOCK_COUNT; clock++) {
        tk_loop *loop = new_loop();
        runner r;
        start_running(&r, loop);
        wait_asleep(&r); /* nothing armed */
        static atomic_int fired;
        atomic_store(&fired, 0);
        sched(loop, mkspec((tk_clock)clock, INT64_MIN, 0, 0, TK_MODES(0), TK_TIMER_ABSOLUTE),
              set_flag_fn, &fired);
        CHECK(wait_flag(&fired, PATIENCE));
        tk_loop_stop(loop);
        pthread_join(r.thread, NULL);
        CHECK_EQ(r.rc, TK_RUN_STOPPED);
        free_loop(loop);
    }
}

/* Two read ends, each readable: the first callback to run replaces the
 * other's watch with one for TK_IO_WRITABLE, which a read end never is. */
typedef struct rewatch {
    int fds[2];
    int replaced;  /* callbacks of the first watches */
    int new_calls; /* callbacks of the replacing watch */
} rewatch;

static void rewatch_new_fn(tk_loop *loop, int fd, uint32_t events, void *ctx) {
    (void)loop, (void)fd, (void)events;
    ((rewatch *)ctx)->new_calls++;
}

static void rewatch_old_fn(tk_loop *loop, int fd, uint32_t events, void *ctx) {
    (void)events;
    rewatch *w = ctx;
    if (w->replaced++ > 0) return;
    int other = fd == w->fds[0] ? w->fds[1] : w->fds[0];
    CHECK_EQ(tk_loop_watch_fd(loop, other, TK_IO_WRITABLE, rewatch_new_fn, w), 0);
}

/* A watch replaced while the loop hands out a batch of events does not get
 * the event reported for the watch it replaced. */
static void test_replaced_watch_gets_no_old_event(void) {
    tk_loop *loop = new_loop();
    int p1[2], p2[2];
    CHECK_EQ(pipe(p1), 0);
    CHECK_EQ(pipe(p2), 0);
    CHECK_EQ(write(p1[1], "x", 1), 1);
    CHECK_EQ(write(p2[1], "x", 1), 1);
    static rewatch w;
    w = (rewatch){.fds = {p1[0], p2[0]}};
    CHECK_EQ(tk_loop_watch_fd(loop, p1[0], TK_IO_READABLE, rewatch_old_fn, &w), 0);
    CHECK_EQ(tk_loop_watch_fd(loop, p2[0], TK_IO_READABLE, rewatch_old_fn, &w), 0);
    /* Both are reported in one epoll_wait: one pass hands out both. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
    CHECK_EQ(w.replaced, 1);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    CHECK_EQ(w.new_calls, 0);
    CHECK_EQ(tk_loop_unwatch_fd(loop, p1[0]), 0);
    CHECK_EQ(tk_loop_unwatch_fd(loop, p2[0]), 0);
    for (int i = 0; i < 2; i++) close(p1[i]), close(p2[i]);
    free_loop(loop);
}

/* A watch callback that runs the loop nested, once per call. */
typedef struct reentry {
    int depth, deepest, calls, nested_rc;
    uint32_t nested_flags;
    int rewatch; /* first replace its own watch (new events, same function) */
} reentry;

static void reentry_fn(tk_loop *loop, int fd, uint32_t events, void *ctx) {
    (void)events;
    reentry *e = ctx;
    e->calls++;
    if (++e->depth > e->deepest) e->deepest = e->depth;
    if (e->depth == 1) {
        if (e->rewatch)
            CHECK_EQ(tk_loop_watch_fd(loop, fd, TK_IO_READABLE | TK_IO_WRITABLE, reentry_fn, e), 0);
        int64_t until = sys_now(TK_CLOCK_MONOTONIC) + 20 * MS;
        e->nested_rc = tk_loop_run(loop, TK_MODES(1), until, e->nested_flags);
    }
    e->depth--;
}

/* A watch's callback is not called again by a run nested in it, while its
 * fd stays ready (and after hanging up), and is called again once it has
 * returned. */
static void test_watch_callback_not_reentered(void) {
    tk_loop *loop = new_loop();
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(write(p[1], "x", 1), 1); /* readable until read, which no one does */
    static reentry e;
    for (int hung_up = 0; hung_up < 2; hung_up++) {
        for (int waits = 0; waits < 2; waits++) {
            e = (reentry){.nested_flags = waits ? 0 : TK_RUN_NOWAIT};
            CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, reentry_fn, &e), 0);
            CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
            CHECK_EQ(e.deepest, 1);
            CHECK_EQ(e.calls, 1);
            CHECK_EQ(e.nested_rc, waits ? TK_RUN_TIMED_OUT : TK_RUN_PASSED);
            /* Back to its events: reported again. */
            CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
            CHECK_EQ(e.calls, 2);
            CHECK_EQ(e.deepest, 1);
        }
        close(p[1]); /* then the same with a hang-up */
    }
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), 0);
    close(p[0]);
    free_loop(loop);
}

/* A watch callback that closes its fd, so that a timerfd the loop opens
 * next (for the boot clock, its first timer there) takes the number. */
typedef struct closer {
    int fd;
    int nest_first;   /* run nested before closing (else after) */
    int calls;        /* callbacks of the watch */
    int number_taken; /* the closed number was in use again: the loop's */
    int nested_rc;
    atomic_int boot_fires;
} closer;

static void closer_timer_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)loop, (void)id, (void)missed;
    atomic_fetch_add(&((closer *)ctx)->boot_fires, 1);
}

static void closer_fn(tk_loop *loop, int fd, uint32_t events, void *ctx) {
    (void)events;
    closer *c = ctx;
    if (c->calls++ > 0) return;
    if (c->nest_first) c->nested_rc = tk_loop_run(loop, TK_MODES(1), TK_FOREVER, TK_RUN_NOWAIT);
    close(fd); /* without unwatching, as the header allows */
    sched(loop, mkspec(TK_CLOCK_BOOTTIME, 10 * MS, 10 * MS, 0, TK_MODES(0), 0), closer_timer_fn, c);
    c->number_taken = fcntl(fd, F_GETFD) >= 0;
    /* A run nested after the close: it must not take the loop's timerfd out
     * of epoll's interest for the watch that had the number. It returns
     * once the boot timer fired in it. */
    if (!c->nest_first) c->nested_rc = tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE);
}

/* A watched fd closed in its callback, its number taken by a timerfd of the
 * loop: neither the nested run's hold nor the callback's return touches the
 * loop's registration of it, so the boot timer fires (and fires again), and
 * the watch's callback is never given the timerfd. */
static void test_closed_in_callback_number_taken_by_loop(void) {
    for (int nest_first = 0; nest_first < 2; nest_first++) {
        tk_loop *loop = new_loop();
        int p[2];
        CHECK_EQ(pipe(p), 0);
        CHECK_EQ(write(p[1], "x", 1), 1);
        static closer c;
        c = (closer){.fd = p[0], .nest_first = nest_first};
        atomic_store(&c.boot_fires, 0);
        CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, closer_fn, &c), 0);
        CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
        CHECK(c.number_taken); /* else this run did not test the case */
        if (!nest_first) CHECK_EQ(c.nested_rc, TK_RUN_PASSED); /* the boot timer fired in it */
        /* Two more fires of the boot timer, each a pass of its own. */
        while (atomic_load(&c.boot_fires) < 3) {
            if (tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE) != TK_RUN_PASSED) break;
        }
        CHECK(atomic_load(&c.boot_fires) >= 3);
        CHECK_EQ(c.calls, 1);
        close(p[1]);
        free_loop(loop);
    }
}

/* A callback that replaces its own watch (new events, same function) and
 * then runs the loop nested is not called again by that run. */
static void test_rewatched_in_callback_not_reentered(void) {
    tk_loop *loop = new_loop();
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(write(p[1], "x", 1), 1);
    static reentry e;
    e = (reentry){.nested_flags = TK_RUN_NOWAIT, .rewatch = 1};
    CHECK_EQ(tk_loop_watch_fd(loop, p[0], TK_IO_READABLE, reentry_fn, &e), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
    CHECK_EQ(e.deepest, 1);
    CHECK_EQ(e.calls, 1);
    CHECK_EQ(e.nested_rc, TK_RUN_PASSED);
    /* The replacing watch has its events once the callback returned. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_ONCE), TK_RUN_PASSED);
    CHECK_EQ(e.calls, 2);
    CHECK_EQ(tk_loop_unwatch_fd(loop, p[0]), 0);
    close(p[0]), close(p[1]);
    free_loop(loop);
}

/* A repeating timer run by tk_loop_fire on another thread. */
typedef struct fired_elsewhere {
    runner *r;
    int64_t deadline;     /* its first deadline, on the monotonic clock */
    uint64_t wakeups;     /* the loop's wake-ups before tk_loop_fire */
    atomic_int on_loop;   /* callbacks the loop's thread ran */
    int raced;            /* the callback started too late to hold the timer */
    int deferred_seen;    /* the loop slept again after its deadline, during fire */
} fired_elsewhere;

static void fired_elsewhere_fn(tk_loop *loop, tk_timer_id id, uint64_t missed, void *ctx) {
    (void)id, (void)missed;
    fired_elsewhere *f = ctx;
    if (tk_loop_runs_on_this_thread(loop)) {
        atomic_fetch_add(&f->on_loop, 1);
        return;
    }
    /* Under tk_loop_fire. Started after the deadline (a stalled test
     * thread): the loop may have fired the timer already; try again. */
    if (sys_now(TK_CLOCK_MONOTONIC) >= f->deadline || atomic_load(&f->on_loop) > 0) {
        f->raced = 1;
        return;
    }
    /* Hold on until the deadline has passed and the loop, having woken for
     * it and set the timer aside (its callback runs here), sleeps again. */
    while (sys_now(TK_CLOCK_MONOTONIC) <= f->deadline) sleep_ns(MS);
    int64_t end = sys_now(TK_CLOCK_MONOTONIC) + PATIENCE;
    while (stats_of(loop).wakeups == f->wakeups && sys_now(TK_CLOCK_MONOTONIC) < end) sleep_ns(MS);
    wait_asleep(f->r);
    f->deferred_seen = stats_of(loop).wakeups > f->wakeups;
}

/* A timer that came due while tk_loop_fire ran its callback on another
 * thread fires on the loop once that callback returns, though the loop went
 * to sleep without it meanwhile. */
static void test_fire_from_another_thread_while_due(void) {
    static fired_elsewhere f;
    for (int attempt = 0; attempt < 5; attempt++) {
        tk_loop *loop = new_loop();
        runner r;
        start_running(&r, loop);
        wait_asleep(&r);
        f.r = &r;
        atomic_store(&f.on_loop, 0);
        f.raced = f.deferred_seen = 0;
        f.wakeups = stats_of(loop).wakeups;
        f.deadline = sys_now(TK_CLOCK_MONOTONIC) + 500 * MS;
        tk_timer_id id = sched(loop, mkspec(TK_CLOCK_MONOTONIC, f.deadline, 3600 * SEC, 0,
                                            TK_MODES(0), TK_TIMER_ABSOLUTE),
                               fired_elsewhere_fn, &f);
        CHECK_EQ(tk_loop_fire(loop, id), 0);
        if (!f.raced) {
            CHECK(f.deferred_seen);
            CHECK(wait_flag(&f.on_loop, PATIENCE)); /* was never: the loop slept on */
        }
        tk_loop_stop(loop);
        pthread_join(r.thread, NULL);
        CHECK_EQ(r.rc, TK_RUN_STOPPED);
        free_loop(loop);
        if (!f.raced) return;
    }
    CHECK(!f.raced); /* five stalls of half a second in a row */
}

/* tk_loop_take_stop takes only a stop that no run took. */
static void test_take_stop(void) {
    tk_loop *loop = new_loop();
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(tk_loop_take_stop(loop), 1);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    /* Taken, it no longer ends the next run. */
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, TK_RUN_NOWAIT), TK_RUN_PASSED);
    /* Taken by a run, it is not there to take. */
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(tk_loop_run(loop, 0, TK_FOREVER, 0), TK_RUN_STOPPED);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    /* While a run runs, on another thread, its stop is its own. */
    runner r;
    start_running(&r, loop);
    CHECK_EQ(tk_loop_stop(loop), 0);
    CHECK_EQ(tk_loop_take_stop(loop), 0);
    pthread_join(r.thread, NULL);
    CHECK_EQ(r.rc, TK_RUN_STOPPED);
    free_loop(loop);
}

static const test_case tests[] = {
    {"oneshot_order", test_oneshot_order, 120},
    {"equal_deadlines", test_equal_deadlines, 120},
    {"mixed_clocks", test_mixed_clocks, 120},
    {"repeating", test_repeating, 120},
    {"cancel_in_own_callback", test_cancel_in_own_callback, 120},
    {"reschedule", test_reschedule, 120},
    {"fire", test_fire, 120},
    {"leeway", test_leeway, 120},
    {"run_results", test_run_results, 120},
    {"modes", test_modes, 120},
    {"nested_run", test_nested_run, 120},
    {"fd", test_fd, 120},
    {"thread_busy_and_stop", test_thread_busy_and_stop, 120},
    {"thread_wakeup", test_thread_wakeup, 120},
    {"thread_earlier_timer", test_thread_earlier_timer, 180},
    {"thread_cancel_while_firing", test_thread_cancel_while_firing, 120},
    {"stress", test_stress, 180},
    {"clock_change_handler", test_clock_change_handler, 120},
    {"missed_judged_when_fired", test_missed_judged_when_fired, 120},
    {"due_behind", test_due_behind, 120},
    {"fd_number_taken_by_loop", test_fd_number_taken_by_loop, 120},
    {"deadline_at_int64_min", test_deadline_at_int64_min, 120},
    {"take_stop", test_take_stop, 60},
    {"fire_from_another_thread_while_due", test_fire_from_another_thread_while_due, 120},
    {"replaced_watch_gets_no_old_event", test_replaced_watch_gets_no_old_event, 60},
    {"watch_callback_not_reentered", test_watch_callback_not_reentered, 60},
    {"closed_in_callback_number_taken_by_loop", test_closed_in_callback_number_taken_by_loop, 60},
    {"rewatched_in_callback_not_reentered", test_rewatched_in_callback_not_reentered, 60},
    {"unwatch_closed_while_open_elsewhere", test_unwatch_closed_while_open_elsewhere, 60},
    {"unwatch_closed_from_another_thread", test_unwatch_closed_from_another_thread, 60},
    {"unwatch_closed_without_descriptors", test_unwatch_closed_without_descriptors, 60},
};

int main(int argc, char **argv) {
    return test_main(argc, argv, "test_loop_real", tests, sizeof tests / sizeof tests[0]);
}
